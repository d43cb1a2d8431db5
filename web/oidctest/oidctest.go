// Package oidctest is a small OpenID Connect provider for tests: discovery,
// a JWKS with a key generated at start, an authorization endpoint that signs
// in whoever the test says, and a token endpoint that exchanges each code
// once, checks the client's secret, the redirect URI and the PKCE verifier,
// and answers an RS256 ID token. Tests reach into the next token to attack
// the relying party with it (another audience, an old expiry, no signature).
package oidctest

import (
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"
)

// Identity is who signs in at the provider.
type Identity struct {
	Subject       string
	Email         string
	EmailVerified *bool // nil: the claim is absent
	Groups        []string
}

// Server is the provider.
type Server struct {
	*httptest.Server
	ClientID, ClientSecret, RedirectURI string

	key, other *rsa.PrivateKey

	mu       sync.Mutex
	user     Identity
	codes    map[string]grant
	tamper   func(header, claims map[string]any) (key any)
	refused  []string // why token requests were refused
	exchange int      // codes exchanged
}

type grant struct {
	user      Identity
	nonce     string
	challenge string
	redirect  string
}

// New starts a provider for one client, redirecting to redirectURI.
func New(t testing.TB, clientID, clientSecret, redirectURI string) *Server {
	t.Helper()
	s := &Server{ClientID: clientID, ClientSecret: clientSecret, RedirectURI: redirectURI, codes: map[string]grant{}}
	var err error
	if s.key, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if s.other, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", s.discovery)
	mux.HandleFunc("GET /jwks", s.jwks)
	mux.HandleFunc("GET /authorize", s.authorize)
	mux.HandleFunc("POST /token", s.token)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// SignIn sets who signs in at the next authorization.
func (s *Server) SignIn(u Identity) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.user = u
}

// Tamper changes the next ID token before it is signed; the key it returns
// signs it (nil: the provider's own key; OtherKey(): a key the JWKS does not
// hold; a []byte: an HMAC secret, for alg HS256; alg "none" in the header:
// no signature at all).
func (s *Server) Tamper(fn func(header, claims map[string]any) any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tamper = fn
}

// OtherKey is a key the provider does not publish.
func (s *Server) OtherKey() *rsa.PrivateKey { return s.other }

// Refused lists why token requests were refused, in order.
func (s *Server) Refused() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.refused...)
}

// Exchanged counts the codes exchanged for tokens.
func (s *Server) Exchanged() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exchange
}

func (s *Server) discovery(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                s.URL,
		"authorization_endpoint":                s.URL + "/authorize",
		"token_endpoint":                        s.URL + "/token",
		"jwks_uri":                              s.URL + "/jwks",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
	})
}

func (s *Server) jwks(w http.ResponseWriter, _ *http.Request) {
	pub := s.key.PublicKey
	writeJSON(w, http.StatusOK, map[string]any{"keys": []map[string]any{{
		"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256",
		"n": b64(pub.N.Bytes()), "e": b64(big.NewInt(int64(pub.E)).Bytes()),
	}}})
}

// authorize signs the set user in at once and sends them back with a code.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != s.ClientID || q.Get("redirect_uri") != s.RedirectURI || q.Get("response_type") != "code" {
		http.Error(w, "unknown client, redirect_uri or response_type", http.StatusBadRequest)
		return
	}
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "PKCE (S256) required", http.StatusBadRequest)
		return
	}
	code := random()
	s.mu.Lock()
	s.codes[code] = grant{user: s.user, nonce: q.Get("nonce"), challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri")}
	s.mu.Unlock()
	back, _ := url.Parse(s.RedirectURI)
	bq := back.Query()
	bq.Set("code", code)
	bq.Set("state", q.Get("state"))
	back.RawQuery = bq.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// token exchanges a code once.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	refuse := func(why string) {
		s.mu.Lock()
		s.refused = append(s.refused, why)
		s.mu.Unlock()
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": why})
	}
	if err := r.ParseForm(); err != nil {
		refuse("bad form")
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != s.ClientID || subtle.ConstantTimeCompare([]byte(secret), []byte(s.ClientSecret)) != 1 {
		refuse("client authentication failed")
		return
	}
	s.mu.Lock()
	g, found := s.codes[r.PostForm.Get("code")]
	delete(s.codes, r.PostForm.Get("code")) // one use, whatever happens next
	tamper := s.tamper
	s.tamper = nil
	s.mu.Unlock()
	switch {
	case r.PostForm.Get("grant_type") != "authorization_code":
		refuse("unsupported grant_type")
		return
	case !found:
		refuse("unknown or used code")
		return
	case r.PostForm.Get("redirect_uri") != g.redirect:
		refuse("redirect_uri differs")
		return
	}
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	if b64(sum[:]) != g.challenge {
		refuse("PKCE verifier does not match")
		return
	}
	now := time.Now()
	header := map[string]any{"alg": "RS256", "kid": "k1", "typ": "JWT"}
	claims := map[string]any{"iss": s.URL, "sub": g.user.Subject, "aud": s.ClientID, "iat": now.Unix(),
		"exp": now.Add(5 * time.Minute).Unix(), "nonce": g.nonce, "email": g.user.Email}
	if g.user.EmailVerified != nil {
		claims["email_verified"] = *g.user.EmailVerified
	}
	if g.user.Groups != nil {
		claims["groups"] = g.user.Groups
	}
	var key any = s.key
	if tamper != nil {
		if k := tamper(header, claims); k != nil {
			key = k
		}
	}
	s.mu.Lock()
	s.exchange++
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"access_token": random(), "token_type": "Bearer", "expires_in": 300,
		"id_token": Sign(header, claims, key)})
}

// Sign makes a JWS compact token: RS256 with an RSA key, HS256 with a
// []byte secret, and no signature with header alg "none".
func Sign(header, claims map[string]any, key any) string {
	h, _ := json.Marshal(header)
	c, _ := json.Marshal(claims)
	input := b64(h) + "." + b64(c)
	if header["alg"] == "none" {
		return input + "."
	}
	if secret, ok := key.([]byte); ok {
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(input))
		return input + "." + b64(m.Sum(nil))
	}
	sum := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key.(*rsa.PrivateKey), crypto.SHA256, sum[:])
	if err != nil {
		panic(err)
	}
	return input + "." + b64(sig)
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func random() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return b64(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
