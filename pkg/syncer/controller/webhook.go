package controller

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/informers"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"capn.dev/capn/pkg/apis/capn/v1alpha1"
	"capn.dev/capn/pkg/syncer/translate"
	"capn.dev/capn/pkg/tenant/names"
)

// The Service webhook: the syncer gives a tenant Service its ClusterIP by
// creating the host Service first, as the tenant apiserver admits the
// create, and patching the host's IP into the tenant object. Both sides
// then hold the same IP by construction; a tenant allocator working alone
// on the same range would sooner or later pick an IP the host has given
// to someone else.
const (
	// WebhookConfigurationName is the tenant MutatingWebhookConfiguration
	// the leading syncer keeps pointing at itself, named after the
	// component (the tenant RBAC the provisioner writes grants it by name).
	WebhookConfigurationName = v1alpha1.ComponentSyncer
	// ServiceWebhookPath is where the syncer serves Service admission.
	ServiceWebhookPath = "/mutate-services"
	serviceWebhookName = "services.syncer.capn.dev"
	// webhookTimeoutSeconds is what the tenant apiserver waits; the work
	// is one host create.
	webhookTimeoutSeconds = 10
	// maxAdmissionReviewBytes bounds a review's body: a Service is at most
	// etcd's 1.5 MiB request limit, sent with its old object.
	maxAdmissionReviewBytes = 4 << 20
	// pendingServiceGrace is how long a host Service the webhook made waits
	// for its tenant Service to appear before it is collected: the tenant
	// create can still fail after the webhook (a quota, a name taken,
	// validation), and nothing tells the webhook so.
	pendingServiceGrace = 30 * time.Second
)

// WebhookOptions turn on the Service webhook. Empty: none, and tenant
// Services keep the tenant's own allocation (the host Service asks for
// it and a clash is reported as an Event).
type WebhookOptions struct {
	// BindAddress is the host:port the HTTPS server listens on.
	BindAddress string
	// AdvertiseAddress is the host:port the tenant apiserver calls: in
	// the webhook's URL and in the serving certificate.
	AdvertiseAddress string
	// ClientCAs, when set, make the webhook require a client certificate
	// that verifies against them and names one of ClientCommonNames: the
	// tenant apiserver's (red-team finding 2: anyone who reached the pod
	// could create host Services in the workload namespace).
	ClientCAs         *x509.CertPool
	ClientCommonNames []string
}

func (o WebhookOptions) enabled() bool { return o.AdvertiseAddress != "" }

// tlsConfig requires and verifies a client certificate when ClientCAs are
// set.
func (o WebhookOptions) tlsConfig(getCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: getCertificate}
	if o.ClientCAs != nil {
		c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, o.ClientCAs
	}
	return c
}

// authenticate refuses, with ClientCAs set, a verified certificate of
// another name than ClientCommonNames: the tenant CA signs every tenant
// user's certificate too.
func (o WebhookOptions) authenticate(next http.Handler) http.Handler {
	if o.ClientCAs == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || !slices.Contains(o.ClientCommonNames, r.TLS.VerifiedChains[0][0].Subject.CommonName) {
			http.Error(w, "only the tenant apiserver may call this webhook", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// servingCerts is the serving identity of the webhook and the kubelet
// API: a CA made at start that lives only in memory (the tenant sees its
// certificate in caBundle, never its key), and a short leaf re-signed
// before it expires, so a leader may serve for years. A new leader makes its own CA and points
// the configuration at itself.
type servingCerts struct {
	host    string
	caKey   *ecdsa.PrivateKey
	ca      *x509.Certificate
	caPEM   []byte
	mu      sync.Mutex
	leaf    *tls.Certificate
	renewAt time.Time
	now     func() time.Time
}

const (
	webhookCAValidity   = 10 * 365 * 24 * time.Hour
	webhookLeafValidity = 90 * 24 * time.Hour
)

func newServingCerts(host string, now func() time.Time) (*servingCerts, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("webhook CA key: %w", err)
	}
	t := now()
	tpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "capn-syncer-webhook-ca"},
		NotBefore: t.Add(-time.Minute), NotAfter: t.Add(webhookCAValidity),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("webhook CA: %w", err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &servingCerts{host: host, caKey: key, ca: ca, caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), now: now}, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

// getCertificate is tls.Config.GetCertificate: the leaf, re-signed at two
// thirds of its life.
func (c *servingCerts) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leaf != nil && c.now().Before(c.renewAt) {
		return c.leaf, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	t := c.now()
	tpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "capn-syncer-webhook"},
		NotBefore: t.Add(-time.Minute), NotAfter: t.Add(webhookLeafValidity),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(c.host); ip != nil {
		tpl.IPAddresses = []net.IP{ip}
	} else {
		tpl.DNSNames = []string{c.host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, c.ca, &key.PublicKey, c.caKey)
	if err != nil {
		return nil, fmt.Errorf("webhook serving certificate: %w", err)
	}
	c.leaf = &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	c.renewAt = t.Add(webhookLeafValidity * 2 / 3)
	return c.leaf, nil
}

// serveWebhook listens on BindAddress and serves Service admission until
// ctx ends.
func (s *Syncer) serveWebhook(ctx context.Context) error {
	host, _, err := net.SplitHostPort(s.o.Webhook.AdvertiseAddress)
	if err != nil {
		return fmt.Errorf("webhook advertise address: %w", err)
	}
	certs, err := newServingCerts(host, s.now)
	if err != nil {
		return err
	}
	s.webhookCA = certs.caPEM
	l, err := net.Listen("tcp", s.o.Webhook.BindAddress)
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(ServiceWebhookPath, s.o.Webhook.authenticate(serveAdmission(s.admitService)))
	mux.Handle(ClaimWebhookPath, s.o.Webhook.authenticate(serveAdmission(s.admitClaim)))
	mux.Handle(StorageWebhookPath, s.o.Webhook.authenticate(serveAdmission(admitStorage)))
	srv := &http.Server{
		Handler:           mux,
		TLSConfig:         s.o.Webhook.tlsConfig(certs.getCertificate),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
	}
	go func() {
		if err := srv.ServeTLS(l, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "Webhook server stopped")
		}
	}()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	return nil
}

// serveAdmission answers one AdmissionReview with admit.
func serveAdmission(admit func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { serveReview(w, r, admit) }
}

func serveReview(w http.ResponseWriter, r *http.Request, admit func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAdmissionReviewBytes))
	if err != nil {
		http.Error(w, "request body too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	resp := admit(r.Context(), review.Request)
	resp.UID = review.Request.UID
	review.Request, review.Response = nil, resp
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

var servicesResource = schema.GroupResource{Resource: "services"}

// errTenantAnswers: the webhook has nothing to give, and the tenant
// apiserver answers the create itself: a live tenant Service holds the
// name (AlreadyExists), or the Service is invalid (its own validation).
var errTenantAnswers = errors.New("the tenant Service exists")

// admitService allocates a created tenant Service's ClusterIP on the host.
func (s *Syncer) admitService(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	allow := &admissionv1.AdmissionResponse{Allowed: true}
	if req.Operation != admissionv1.Create || req.Kind.Group != "" || req.Kind.Kind != "Service" || req.SubResource != "" {
		return allow
	}
	var svc corev1.Service
	if err := json.Unmarshal(req.Object.Raw, &svc); err != nil {
		return deny(apierrors.NewBadRequest("the Service does not decode"))
	}
	if svc.Namespace == "" {
		svc.Namespace = req.Namespace
	}
	allocate, errs := translate.AdmitService(&svc)
	if len(errs) > 0 {
		return deny(apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Service").GroupKind(), svc.Name, errs))
	}
	// sideEffects NoneOnDryRun: a dry run touches nothing on the host and
	// shows the tenant allocator's answer.
	if !allocate || ptr.Deref(req.DryRun, false) {
		return allow
	}
	ip, err := s.allocateClusterIP(ctx, &svc)
	if errors.Is(err, errTenantAnswers) {
		return allow
	}
	if err != nil {
		return deny(err)
	}
	pt := admissionv1.PatchTypeJSONPatch
	return &admissionv1.AdmissionResponse{Allowed: true, Patch: translate.ClusterIPPatch(ip), PatchType: &pt}
}

func deny(err error) *admissionv1.AdmissionResponse {
	st := apierrors.APIStatus(apierrors.NewInternalError(err))
	if s, ok := err.(apierrors.APIStatus); ok {
		st = s
	}
	status := st.Status()
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &status}
}

// allocateClusterIP creates svc's host Service, without the tenant UID
// (the tenant object has none before it is stored), and returns the
// ClusterIP the host gave it. serviceKind adopts it once the tenant
// Service exists with that IP, and collects it after pendingServiceGrace
// otherwise. Reads here are live: the cache may not show the host Service
// an earlier attempt made a moment ago.
func (s *Syncer) allocateClusterIP(ctx context.Context, svc *corev1.Service) (string, error) {
	want, _ := translate.HostService(svc, s.o.WorkloadNamespace)
	client := s.o.Host.CoreV1().Services(s.o.WorkloadNamespace)
	logger := klog.FromContext(ctx)
	for range 3 {
		created, err := client.Create(ctx, want, metav1.CreateOptions{FieldManager: fieldManager})
		switch {
		case err == nil:
			logger.V(2).Info("allocated a tenant Service's ClusterIP on the host", "service", klog.KObj(svc), "clusterIP", created.Spec.ClusterIP)
			return created.Spec.ClusterIP, nil
		case apierrors.IsInvalid(err) && svc.Spec.ClusterIP != "":
			return "", apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Service").GroupKind(), svc.Name, field.ErrorList{
				field.Invalid(field.NewPath("spec", "clusterIP"), svc.Spec.ClusterIP,
					"the management cluster cannot give this Service that ClusterIP (it is taken there, or outside the service range)")})
		case apierrors.IsInvalid(err):
			// The Service itself is invalid: the tenant's own validation,
			// which runs after this webhook, says why in the tenant's terms.
			return "", errTenantAnswers
		case apierrors.IsForbidden(err):
			return "", apierrors.NewForbidden(servicesResource, svc.Name,
				errors.New("the tenant's data-plane quota for Services on the management cluster is used up"))
		case !apierrors.IsAlreadyExists(err):
			logger.Error(err, "Allocating a tenant Service's ClusterIP on the host", "service", klog.KObj(svc))
			return "", apierrors.NewServiceUnavailable("could not allocate the Service's ClusterIP on the management cluster; retry")
		}
		cur, err := client.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return "", apierrors.NewServiceUnavailable("could not read the management cluster; retry")
		}
		uid := cur.Labels[names.TenantUIDLabel]
		if uid == "" && (svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == cur.Spec.ClusterIP) {
			return cur.Spec.ClusterIP, nil // an earlier attempt's, still pending
		}
		if uid != "" {
			live, err := s.o.Tenant.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
			if err == nil && string(live.UID) == uid {
				return "", errTenantAnswers
			}
			if err != nil && !apierrors.IsNotFound(err) {
				return "", apierrors.NewServiceUnavailable("could not read the tenant Service; retry")
			}
		}
		// A deleted tenant Service's host Service the syncer has not
		// removed yet, or a pending one at another IP: make room.
		err = client.Delete(ctx, cur.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return "", apierrors.NewServiceUnavailable("could not replace a stale Service on the management cluster; retry")
		}
	}
	return "", apierrors.NewServiceUnavailable("the Service's ClusterIP on the management cluster is changing; retry")
}

// webhookConfiguration is the tenant MutatingWebhookConfiguration that
// sends Service creates to this syncer. Every field the apiserver would
// default is set, so an unchanged configuration compares equal.
//
// failurePolicy Fail: a Service the host cannot back is unroutable, so
// while no syncer answers (it restarts, fails over, or the tenant sleeps)
// creating a ClusterIP Service fails with the webhook's error and the
// client retries; existing Services and every other request are
// untouched. default/kubernetes is excluded by a match condition, so the
// tenant apiserver's own Service never waits for the syncer.
func (s *Syncer) webhookConfiguration() *admissionregistrationv1.MutatingWebhookConfiguration {
	services := s.webhook(serviceWebhookName, ServiceWebhookPath, []admissionregistrationv1.RuleWithOperations{
		rule(admissionregistrationv1.NamespacedScope, "", "services", admissionregistrationv1.Create),
	}, []admissionregistrationv1.MatchCondition{{
		Name:       "not-the-tenant-apiserver",
		Expression: "!(request.namespace == 'default' && request.name == 'kubernetes')",
	}})
	// It creates host Services, but not for a dry run.
	services.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun)
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: WebhookConfigurationName, Labels: map[string]string{"app.kubernetes.io/managed-by": names.ManagedByValue}},
		Webhooks:   []admissionregistrationv1.MutatingWebhook{services, s.claimWebhook(), s.storageWebhook()},
	}
}

// webhookKind keeps the tenant's webhook configuration pointing at this
// syncer, and serves the webhook: a tenant admin who edits or deletes the
// configuration gets it back.
type webhookKind struct {
	*Syncer
	q queue
}

// webhookKey is the webhook queue's one key.
const webhookKey = "webhook"

func (k *webhookKind) name() string { return kindWebhook }

func (k *webhookKind) register(r *registrar) {
	if !k.o.Webhook.enabled() {
		return
	}
	k.q = r.queue(kindWebhook)
	dns := r.queue(kindDNS)
	k.tenantHook = informers.NewSharedInformerFactoryWithOptions(k.o.TenantWatch, k.o.ResyncPeriod,
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
			lo.FieldSelector = fields.OneTermEqualSelector("metadata.name", WebhookConfigurationName).String()
		}))
	hooks := k.tenantHook.Admissionregistration().V1().MutatingWebhookConfigurations()
	k.tenantWebhooks = hooks.Lister()
	r.waitFor(hooks.Informer().HasSynced)
	// kube-dns waits for the webhook to be registered (dnsKind).
	handle(hooks.Informer(), func(any) {
		k.q.Add(webhookKey)
		dns.Add(dnsKey)
	})
	r.beforeSync(k.start)
}

// start serves the webhook before anything registers it.
func (k *webhookKind) start(ctx context.Context) error {
	if err := k.serveWebhook(ctx); err != nil {
		return err
	}
	k.tenantHook.Start(ctx.Done())
	k.q.Add(webhookKey)
	return nil
}

// webhookFields: the webhooks; the metadata is the tenant admin's to add to.
var webhookFields = ownedField(func(c *admissionregistrationv1.MutatingWebhookConfiguration) *[]admissionregistrationv1.MutatingWebhook {
	return &c.Webhooks
})

func (k *webhookKind) sync(ctx context.Context, _ string) error {
	cur, err := cached(k.tenantWebhooks.Get(WebhookConfigurationName))
	if err != nil {
		return err
	}
	_, _, err = applyIfChanged(ctx, k.o.Tenant.AdmissionregistrationV1().MutatingWebhookConfigurations(), cur, k.webhookConfiguration(), webhookFields)
	return err
}
