package web

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
	"golang.org/x/crypto/bcrypt"

	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
)

const (
	sessionCookie = "gatehouse_session"
	loginCookie   = "gatehouse_login_csrf"
	userKey       = "gatehouse.user"
)

// User is the logged-in web user.
type User struct {
	Name string
	Role string
	CSRF string
	// session is the stored session the user was read from: the gate asks
	// again, under the row's lock, whether it may still decide (entitled).
	session store.Session
}

// CanDecide reports whether the user may approve or reject on the web.
func (u *User) CanDecide() bool { return canDecide(u.Role) }

func canDecide(role string) bool { return role == config.RoleApprover || role == config.RoleAdmin }

// Identity is the user's approver identity.
func (u *User) Identity() string { return "web:" + u.Name }

func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func sessionID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// secureCookies is true when the server is reached over https.
func (s *Server) secureCookies() bool { return strings.HasPrefix(s.opts.PublicURL, "https://") }

func (s *Server) setCookie(c echo.Context, name, value string, maxAge int) {
	c.SetCookie(&http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true,
		Secure: s.secureCookies(), SameSite: http.SameSiteLaxMode})
}

// checkPassword verifies a login against the configured users (bcrypt), or
// the bootstrap admin when none are configured. cred is the fingerprint of
// the secret it was checked against (credential), read with the user from
// the same config.
func (s *Server) checkPassword(name, password string) (u config.User, cred string, ok bool) {
	a := s.auth.Load()
	if len(a.users) == 0 && s.opts.BootstrapPassword != "" {
		ok := subtle.ConstantTimeCompare([]byte(name), []byte("admin")) == 1 &&
			subtle.ConstantTimeCompare([]byte(password), []byte(s.opts.BootstrapPassword)) == 1
		return config.User{Name: "admin", Role: config.RoleAdmin}, a.bootstrap, ok
	}
	for i, u := range a.users {
		if u.Name == name {
			return u, a.creds[i], bcrypt.CompareHashAndPassword([]byte(u.PasswordBcrypt), []byte(password)) == nil
		}
	}
	// Spend the same time on unknown names as on wrong passwords.
	_ = bcrypt.CompareHashAndPassword([]byte("$2a$10$7EqJtq98hPqEX7fNZaFWoOhi5BWX4Z3Yo3XjY8y0qzVw0YJ7wE5Y2"), []byte(password))
	return config.User{}, "", false
}

// The kinds of secret a password session is made with, which credential
// keeps apart.
const (
	bcryptSecret    = "password_bcrypt"
	bootstrapSecret = "bootstrap"
)

// credential is what a password session records of the secret it was
// made with, and what it must still match at every request: the hex
// SHA-256 of a user's password_bcrypt, or of the bootstrap password. A
// plain hash is enough, and a key would add nothing: a password_bcrypt
// holds its own random salt, so the hash of it gives a reader of the
// database nothing to test a guessed password against without the config;
// the bootstrap password is 96 random bits, new at each start. (A key kept
// by the server would have to be the same on every replica and across
// restarts, or sessions would end at each.) Never the password itself.
func credential(kind, secret string) string {
	sum := sha256.Sum256([]byte(kind + "\x00" + secret))
	return hex.EncodeToString(sum[:])
}

// startSession stores a new session and sets its cookie. provider is ""
// for a password login, with cred the credential it was made with, and
// ProviderOIDC for single sign-on, with no cred.
func (s *Server) startSession(c echo.Context, u config.User, provider, cred string) error {
	tok := randomToken()
	now := s.now()
	err := s.opts.Sessions.CreateSession(c.Request().Context(), store.Session{
		ID: sessionID(tok), UserName: u.Name, Role: u.Role, CSRF: randomToken(), CreatedAt: now, ExpiresAt: now.Add(s.opts.SessionTTL),
		Provider: provider, Credential: cred})
	if err != nil {
		return err
	}
	s.setCookie(c, sessionCookie, tok, int(s.opts.SessionTTL.Seconds()))
	return nil
}

// currentUser returns the session's user, or nil.
func (s *Server) currentUser(c echo.Context) *User {
	if u, ok := c.Get(userKey).(*User); ok {
		return u
	}
	ck, err := c.Cookie(sessionCookie)
	if err != nil || ck.Value == "" {
		return nil
	}
	se, err := s.opts.Sessions.GetSession(c.Request().Context(), sessionID(ck.Value), s.now())
	if err != nil {
		if !errors.Is(err, store.ErrNoSession) {
			s.log.Error("reading session failed", "err", err)
		}
		return nil
	}
	role, ok := s.sessionRole(se)
	if !ok {
		return nil
	}
	u := &User{Name: se.UserName, Role: role, CSRF: se.CSRF, session: se}
	c.Set(userKey, u)
	return u
}

// sessionRole is the role a session's user has now: a password user's as
// the config says at this request (a reload that demotes or removes a
// user takes effect at once), a single sign-on user's as the provider's
// claims said at sign-in. ok is false for a session that must end: its
// user removed from the config, its password changed since it was made
// (a new password_bcrypt, or the bootstrap password of an earlier start:
// its credential no longer matches; a session made before sessions kept
// one has none, and ends too), or single sign-on no longer configured.
func (s *Server) sessionRole(se store.Session) (role string, ok bool) {
	switch se.Provider {
	case ProviderOIDC:
		return se.Role, s.sso != nil
	case "":
	default:
		return "", false
	}
	role, cred, listed := s.configRole(se.UserName)
	return role, listed && subtle.ConstantTimeCompare([]byte(cred), []byte(se.Credential)) == 1
}

// entitled is the gate's question, asked under the row's lock as a web
// verdict is written: whether u's session may still decide, by the config
// in force then (sessionRole), not as it was when the form arrived.
func (s *Server) entitled(u *User) func() error {
	return func() error {
		role, ok := s.sessionRole(u.session)
		switch {
		case !ok:
			return gate.Errorf(gate.EFORBIDDEN, "your session ended while this was sent (the config was reloaded): log in again")
		case !canDecide(role):
			return gate.Errorf(gate.EFORBIDDEN, "your role (%s) may read requests but not approve or reject them", role)
		}
		return nil
	}
}

// configRole is a password user's role as the config says now, and the
// credential they sign in with: the bootstrap admin's when no users are
// configured; listed is false for a name the config does not hold.
func (s *Server) configRole(name string) (role, cred string, listed bool) {
	a := s.auth.Load()
	if len(a.users) == 0 {
		if name == "admin" && s.opts.BootstrapPassword != "" {
			return config.RoleAdmin, a.bootstrap, true
		}
		return "", "", false
	}
	for i, u := range a.users {
		if u.Name == name {
			return u.Role, a.creds[i], true
		}
	}
	return "", "", false
}

// MayApprove says whether a web user may approve now, as far as this
// server can tell: a password user by the config's role at this moment
// (the bootstrap admin included). A single sign-on user, whose name is
// their email (password names hold no @ when single sign-on is on), could
// give a grant only with the role the provider's answer gave at sign-in,
// from their groups, which this server cannot ask again: while single
// sign-on is on, their grants hold until they end or are revoked, as
// docs/policy.md says. A name the config no longer lists is a removed
// password user, whether or not single sign-on is on. The gate asks it
// before a grant given on the web page approves a call.
func (s *Server) MayApprove(name string) bool {
	if role, _, listed := s.configRole(name); listed {
		return canDecide(role)
	}
	return s.sso != nil && strings.Contains(name, "@")
}

// requireLogin sends visitors without a session to the login page.
func (s *Server) requireLogin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.currentUser(c) == nil {
			if c.Request().Method == http.MethodGet {
				return c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(c.Request().URL.RequestURI()))
			}
			return s.page(c, http.StatusUnauthorized, "error", pageData{Title: "Log in first", Message: "Your session has ended. Log in again."})
		}
		return next(c)
	}
}

// checkCSRF compares a form's csrf field with the session's token.
func (s *Server) checkCSRF(c echo.Context, u *User) bool {
	got := c.FormValue("csrf")
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(u.CSRF)) == 1
}

// safeNext keeps redirects after login on this site.
func safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") {
		return "/"
	}
	// Browsers drop tabs and newlines from a Location, so "/\t/evil.example"
	// would become "//evil.example": refuse any control character or space.
	if strings.IndexFunc(next, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		return "/"
	}
	if u, err := url.Parse(next); err != nil || u.Scheme != "" || u.Host != "" {
		return "/"
	}
	return next
}
