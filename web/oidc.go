package web

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/labstack/echo/v4"
	"golang.org/x/oauth2"

	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/text"
)

// Single sign-on through OpenID Connect: the authorization code flow with
// PKCE. /auth/oidc/login sends the browser to the provider with a fresh
// state, nonce and PKCE verifier, which wait in a short-lived cookie scoped
// to /auth/oidc/; /auth/oidc/callback takes the cookie (once: it is cleared
// on every answer), checks the state, exchanges the code with the verifier,
// verifies the ID token (signature against the provider's JWKS, issuer,
// audience, expiry; go-oidc refuses unsigned tokens and algorithms the
// provider does not list), checks the nonce, and maps the email and groups
// to a role. Nobody without a role gets a session.
const (
	oidcCookie   = "gatehouse_oidc"
	oidcPath     = "/auth/oidc/"
	oidcLoginTTL = 10 * time.Minute
	// ProviderOIDC marks sessions made by single sign-on.
	ProviderOIDC = "oidc"
)

// ssoLogin is the single sign-on of one server. The provider's discovery
// document is fetched at the first sign-in, and again after a failure, so a
// provider that is down at boot does not stop the server.
type ssoLogin struct {
	cfg      config.OIDC
	redirect string
	client   *http.Client

	mu       sync.Mutex
	oauth    *oauth2.Config
	verifier *oidc.IDTokenVerifier
}

func newSSO(cfg *config.OIDC, publicURL string) *ssoLogin {
	if cfg == nil {
		return nil
	}
	return &ssoLogin{cfg: *cfg, redirect: strings.TrimRight(publicURL, "/") + oidcPath + "callback",
		client: &http.Client{Timeout: 10 * time.Second}}
}

// ctx carries the HTTP client that go-oidc and oauth2 use.
func (o *ssoLogin) ctx(parent context.Context) context.Context {
	return oidc.ClientContext(parent, o.client)
}

// provider discovers the provider once.
func (o *ssoLogin) provider(ctx context.Context) (*oauth2.Config, *oidc.IDTokenVerifier, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.oauth != nil {
		return o.oauth, o.verifier, nil
	}
	p, err := oidc.NewProvider(o.ctx(ctx), o.cfg.Issuer)
	if err != nil {
		return nil, nil, fmt.Errorf("oidc: discovery at %s: %w", o.cfg.Issuer, err)
	}
	o.oauth = &oauth2.Config{ClientID: o.cfg.ClientID, ClientSecret: o.cfg.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: o.redirect, Scopes: append([]string{oidc.ScopeOpenID, "email", "profile"}, o.cfg.Scopes...)}
	o.verifier = p.VerifierContext(o.ctx(context.Background()), &oidc.Config{ClientID: o.cfg.ClientID})
	return o.oauth, o.verifier, nil
}

// role is the highest role whose globs match the email or a group; "" when none.
func (o *ssoLogin) role(email string, groups []string) string {
	email = strings.ToLower(email)
	matches := func(globs []string) bool {
		for _, g := range globs {
			if gate.Glob(strings.ToLower(g), email) {
				return true
			}
			for _, grp := range groups {
				if grp != "" && gate.Glob(g, grp) {
					return true
				}
			}
		}
		return false
	}
	switch r := o.cfg.Roles; {
	case matches(r.Admin):
		return config.RoleAdmin
	case matches(r.Approver):
		return config.RoleApprover
	case matches(r.Auditor):
		return config.RoleAuditor
	}
	return ""
}

// ssoStart is GET /auth/oidc/login?next=: off to the provider.
func (s *Server) ssoStart(c echo.Context) error {
	oc, _, err := s.sso.provider(c.Request().Context())
	if err != nil {
		s.log.Error("single sign-on unavailable", "err", err)
		return s.page(c, http.StatusBadGateway, "error", pageData{Title: "Sign-in unavailable",
			Message: "The identity provider cannot be reached. Try again shortly, or log in with a password."})
	}
	state, nonce, verifier := randomToken(), randomToken(), oauth2.GenerateVerifier()
	next := base64.RawURLEncoding.EncodeToString([]byte(safeNext(c.QueryParam("next"))))
	c.SetCookie(&http.Cookie{Name: oidcCookie, Value: strings.Join([]string{state, nonce, verifier, next}, "."), Path: oidcPath,
		MaxAge: int(oidcLoginTTL.Seconds()), HttpOnly: true, Secure: s.secureCookies(), SameSite: http.SameSiteLaxMode})
	securityHeaders(c)
	return c.Redirect(http.StatusFound, oc.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)))
}

// ssoCallback is GET /auth/oidc/callback: the provider's answer.
func (s *Server) ssoCallback(c echo.Context) error {
	ck, _ := c.Cookie(oidcCookie)
	// One use: whatever happens, this sign-in attempt ends here.
	c.SetCookie(&http.Cookie{Name: oidcCookie, Value: "", Path: oidcPath, MaxAge: -1, HttpOnly: true,
		Secure: s.secureCookies(), SameSite: http.SameSiteLaxMode})
	refuse := func(status int, msg string, logArgs ...any) error {
		s.log.Warn("single sign-on refused", append([]any{"why", msg, "ip", c.RealIP()}, logArgs...)...)
		return s.page(c, status, "error", pageData{Title: "Not signed in", Message: msg})
	}
	var parts []string
	if ck != nil {
		parts = strings.Split(ck.Value, ".")
	}
	if len(parts) != 4 {
		return refuse(http.StatusForbidden, "This sign-in was not started here, or it expired. Start again from the login page.")
	}
	state, nonce, verifier := parts[0], parts[1], parts[2]
	next, _ := base64.RawURLEncoding.DecodeString(parts[3])
	if e := c.QueryParam("error"); e != "" {
		return refuse(http.StatusForbidden, "The identity provider did not sign you in: "+e+" "+c.QueryParam("error_description"))
	}
	if got := c.QueryParam("state"); got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(state)) != 1 {
		return refuse(http.StatusForbidden, "This sign-in answer does not belong to the sign-in started in this browser (wrong state). Start again from the login page.")
	}
	oc, idv, err := s.sso.provider(c.Request().Context())
	if err != nil {
		s.log.Error("single sign-on unavailable", "err", err)
		return refuse(http.StatusBadGateway, "The identity provider cannot be reached. Try again shortly.")
	}
	ctx, cancel := context.WithTimeout(s.sso.ctx(c.Request().Context()), 15*time.Second)
	defer cancel()
	tok, err := oc.Exchange(ctx, c.QueryParam("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		return refuse(http.StatusForbidden, "The identity provider refused the sign-in code (used before, expired, or not for this sign-in).", "err", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return refuse(http.StatusForbidden, "The identity provider sent no ID token.")
	}
	idt, err := idv.Verify(ctx, raw)
	if err != nil {
		return refuse(http.StatusForbidden, "The ID token did not verify.", "err", err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(nonce)) != 1 {
		return refuse(http.StatusForbidden, "The ID token was not issued for this sign-in (wrong nonce).")
	}
	email, groups, err := s.ssoClaims(idt)
	if err != nil {
		return refuse(http.StatusForbidden, err.Error())
	}
	role := s.sso.role(email, groups)
	if role == "" {
		return refuse(http.StatusForbidden, fmt.Sprintf("You are signed in at the identity provider as %s, but no role here is given to that email or your groups. Ask an admin to add you to auth.oidc.roles.", email), "email", email)
	}
	if err := s.startSession(c, config.User{Name: email, Role: role}, ProviderOIDC, ""); err != nil {
		return err
	}
	s.log.Info("web login", "user", email, "role", role, "via", ProviderOIDC)
	return c.Redirect(http.StatusSeeOther, safeNext(string(next)))
}

// ssoClaims reads the verified token's email (required, and not marked
// unverified) and groups.
func (s *Server) ssoClaims(idt *oidc.IDToken) (string, []string, error) {
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return "", nil, errors.New("the ID token's claims are unreadable")
	}
	email, _ := claims["email"].(string)
	lower, ok := text.LowerEmail(email)
	if !ok {
		return "", nil, fmt.Errorf("the identity provider's email %q has a character that lower-cases into another one, so it cannot be told apart from another address", email)
	}
	email = strings.TrimSpace(lower)
	if email == "" || !strings.Contains(email, "@") || strings.ContainsAny(email, " \t\r\n") {
		return "", nil, errors.New("the identity provider sent no usable email; ask it to release the email claim (scope email)")
	}
	if v, ok := claims["email_verified"]; ok && v != true && v != "true" {
		// false, and anything else a provider writes there ("false" as a
		// string, as some do): only a plain yes counts as verified.
		return "", nil, fmt.Errorf("the identity provider says %s is not verified (email_verified: %v)", email, v)
	}
	name := s.sso.cfg.GroupsClaim
	if name == "" {
		name = "groups"
	}
	var groups []string
	switch g := claims[name].(type) {
	case string:
		groups = []string{g}
	case []any:
		for _, v := range g {
			if str, ok := v.(string); ok {
				groups = append(groups, str)
			}
		}
	}
	return email, groups, nil
}
