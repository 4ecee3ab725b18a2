package imagebuild

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// CABundle returns the CA bundle of the image, in PEM, and how many roots
// it holds: the Mozilla NSS roots of golang.org/x/crypto/x509roots/fallback
// (the version go.mod pins), in that module's order. Roots that carry a
// constraint X.509 cannot express (a distrust-after date) are left out: a
// PEM bundle would trust them without it, for certificates NSS no longer
// trusts.
func CABundle() ([]byte, int, error) {
	var b bytes.Buffer
	n := 0
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		if _, err := x509.ParseCertificate(root.Certificate); err != nil {
			return nil, 0, fmt.Errorf("CA bundle: root %d: %w", n, err)
		}
		if err := pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}); err != nil {
			return nil, 0, fmt.Errorf("CA bundle: %w", err)
		}
		n++
	}
	if n == 0 {
		return nil, 0, fmt.Errorf("CA bundle: x509roots/fallback/bundle holds no unconstrained root")
	}
	return b.Bytes(), n, nil
}
