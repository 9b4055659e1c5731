package translate

import "time"

// RefreshFraction of a token's lifetime may pass before the syncer asks
// for a new one, as the kubelet does: a client that reads the file again
// always finds a token with a fifth of its life left.
const RefreshFraction = 0.8

// TokenRefreshAt is when a token issued at issued and expiring at expires
// must be replaced. A token whose expiry is not after its issue time is
// due at once.
func TokenRefreshAt(issued, expires time.Time) time.Time {
	life := expires.Sub(issued)
	if life <= 0 {
		return issued
	}
	return issued.Add(time.Duration(float64(life) * RefreshFraction))
}

// TokenExpirationSeconds is what the syncer asks the tenant apiserver for:
// the pod's own expirationSeconds, except the kubelet's 3607 s default,
// which kube-apiserver would extend to a year
// (--service-account-extend-token-expiration); it is asked for as 3600.
func TokenExpirationSeconds(asked int64) int64 {
	if asked == 3607 {
		return 3600
	}
	return asked
}
