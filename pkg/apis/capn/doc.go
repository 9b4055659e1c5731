// Package capn is the internal (hub) version of the capn.dev API group. All
// validation and registry logic works on these types; wire versions convert
// to and from them.
//
// +k8s:deepcopy-gen=package
// +groupName=capn.dev
package capn
