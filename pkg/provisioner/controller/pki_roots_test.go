package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"capn.dev/capn/pkg/provisioner"
	"capn.dev/capn/pkg/provisioner/pki"
)

func TestRegeneratedRoots(t *testing.T) {
	some := map[string][]byte{"k": []byte("v")}
	// First issue: nothing existed, nothing was lost.
	assert.Empty(t, regeneratedRoots(pki.Data{}, []string{provisioner.SecretCA, provisioner.SecretAPIServerServing}))
	// The cluster CA deleted by hand while the rest stayed.
	had := pki.Data{provisioner.SecretEtcdCA: some, provisioner.SecretAPIServerServing: some}
	assert.Equal(t, []string{provisioner.SecretCA},
		regeneratedRoots(had, []string{provisioner.SecretCA, provisioner.SecretAPIServerServing}))
	// A leaf reissued (renewal, or deleted by hand) is no lost root.
	had[provisioner.SecretCA] = some
	assert.Empty(t, regeneratedRoots(had, []string{provisioner.SecretAPIServerServing}))
}
