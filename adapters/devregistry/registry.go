package devregistry

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"
)

const (
	loginPath     = "/login"
	loggedOutPath = "/logged-out"
	// LicensePath is the license API: GET with "Authorization: Bearer <key>".
	LicensePath = "/api/license"
)

//go:embed login.html
var loginFS embed.FS

var loginTmpl = template.Must(template.ParseFS(loginFS, "login.html"))

// LicenseResponse is the license API's JSON body.
type LicenseResponse struct {
	Account         string   `json:"account"`
	OwnerEmail      string   `json:"owner_email"`
	Products        []string `json:"products"`
	ManagedIdentity bool     `json:"managed_identity"`
	Suspended       bool     `json:"suspended"`
}

// Registry is a running (or mountable) development identity registry.
type Registry struct {
	issuer   string
	store    *storage
	provider op.OpenIDProvider
	handler  http.Handler
	log      *slog.Logger

	mu       sync.Mutex
	licenses map[string]License

	srv *http.Server
	ln  net.Listener
}

// New builds a registry whose public base URL is issuer (no trailing slash).
func New(issuer string, cfg Config, log *slog.Logger) (*Registry, error) {
	if log == nil {
		log = slog.Default()
	}
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	r := &Registry{issuer: strings.TrimSuffix(issuer, "/"), store: newStorage(key), log: log, licenses: map[string]License{}}
	for _, c := range cfg.Clients {
		r.store.clients[c.ID] = c
	}
	for _, u := range cfg.Users {
		r.store.users[u.Subject] = u
	}
	for _, l := range cfg.Licenses {
		r.licenses[l.Key] = l
	}
	var cryptoKey [32]byte
	if _, err := rand.Read(cryptoKey[:]); err != nil {
		return nil, err
	}
	opCfg := &op.Config{
		CryptoKey:                cryptoKey,
		DefaultLogoutRedirectURI: loggedOutPath,
		CodeMethodS256:           true,
		AuthMethodPost:           true,
		SupportedUILocales:       []language.Tag{language.English},
	}
	opts := []op.Option{op.WithLogger(log)}
	if strings.HasPrefix(r.issuer, "http://") {
		opts = append(opts, op.WithAllowInsecure())
	}
	provider, err := op.NewProvider(opCfg, r.store, op.StaticIssuer(r.issuer), opts...)
	if err != nil {
		return nil, fmt.Errorf("devregistry: %w", err)
	}
	r.provider = provider
	interceptor := op.NewIssuerInterceptor(provider.IssuerFromRequest)

	mux := http.NewServeMux()
	mux.HandleFunc("GET "+loginPath, r.showLogin)
	mux.Handle("POST "+loginPath, interceptor.HandlerFunc(r.submitLogin))
	mux.HandleFunc("GET "+loggedOutPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("You are signed out of the development registry.\n"))
	})
	mux.HandleFunc("GET "+LicensePath, r.license)
	mux.Handle("/", provider)
	r.handler = mux
	return r, nil
}

// Start listens on addr ("127.0.0.1:0" picks a free port) and serves a
// registry whose issuer is http://<bound address>. Tests use it in-process.
func Start(addr string, cfg Config, log *slog.Logger) (*Registry, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	issuer := cfg.Issuer
	if issuer == "" {
		issuer = "http://" + ln.Addr().String()
	}
	r, err := New(issuer, cfg, log)
	if err != nil {
		ln.Close()
		return nil, err
	}
	r.ln = ln
	r.srv = &http.Server{Handler: r.handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := r.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("devregistry serve", "err", err)
		}
	}()
	return r, nil
}

// Issuer is the registry's base URL (the OIDC issuer).
func (r *Registry) Issuer() string { return r.issuer }

// Handler serves every registry route.
func (r *Registry) Handler() http.Handler { return r.handler }

// Close stops a registry started with Start.
func (r *Registry) Close() error {
	if r.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return r.srv.Shutdown(ctx)
}

// PutLicense adds or replaces a license (tests flip suspended, products, …).
func (r *Registry) PutLicense(l License) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.licenses[l.Key] = l
}

// PutUser adds or replaces a user.
func (r *Registry) PutUser(u User) {
	if u.Subject == "" {
		u.Subject = SubjectFor(u.Email)
	}
	r.store.mu.Lock()
	defer r.store.mu.Unlock()
	r.store.users[u.Subject] = u
}

// PutClient adds or replaces a client.
func (r *Registry) PutClient(c Client) {
	r.store.mu.Lock()
	defer r.store.mu.Unlock()
	r.store.clients[c.ID] = c
}

// EndSessionCount reports how many times subject's provider session was ended.
func (r *Registry) EndSessionCount(subject string) int {
	r.store.mu.Lock()
	defer r.store.mu.Unlock()
	return r.store.terminated[subject]
}

func (r *Registry) license(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	key, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	r.mu.Lock()
	l, found := r.licenses[strings.TrimSpace(key)]
	r.mu.Unlock()
	if !ok || !found {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_license"})
		return
	}
	products := l.Products
	if products == nil {
		products = []string{}
	}
	writeJSON(w, http.StatusOK, LicenseResponse{Account: l.Account, OwnerEmail: l.OwnerEmail, Products: products,
		ManagedIdentity: l.ManagedIdentity, Suspended: l.Suspended})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

type loginPage struct {
	AuthRequestID string
	Email         string
	Error         string
}

func (r *Registry) showLogin(w http.ResponseWriter, req *http.Request) {
	r.renderLogin(w, http.StatusOK, loginPage{AuthRequestID: req.URL.Query().Get("authRequestID")})
}

func (r *Registry) renderLogin(w http.ResponseWriter, status int, p loginPage) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY")
	w.WriteHeader(status)
	if err := loginTmpl.Execute(w, p); err != nil {
		r.log.Error("render login", "err", err)
	}
}

func (r *Registry) submitLogin(w http.ResponseWriter, req *http.Request) {
	req.Body = http.MaxBytesReader(w, req.Body, 16<<10)
	if err := req.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	p := loginPage{AuthRequestID: req.PostForm.Get("authRequestID"), Email: req.PostForm.Get("email")}
	if _, err := r.store.AuthRequestByID(req.Context(), p.AuthRequestID); err != nil {
		p.Error = "This sign-in request has expired. Go back to the application and start again."
		r.renderLogin(w, http.StatusBadRequest, p)
		return
	}
	u, ok := r.store.checkPassword(p.Email, req.PostForm.Get("password"))
	if !ok {
		p.Error = "Wrong email or password."
		r.renderLogin(w, http.StatusUnauthorized, p)
		return
	}
	if err := r.store.completeRequest(p.AuthRequestID, u.Subject, time.Now()); err != nil {
		p.Error = "This sign-in request has expired. Go back to the application and start again."
		r.renderLogin(w, http.StatusBadRequest, p)
		return
	}
	http.Redirect(w, req, op.AuthCallbackURL(r.provider)(req.Context(), p.AuthRequestID), http.StatusFound)
}

func constantTimeEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
