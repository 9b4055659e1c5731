package nestedcluster

// TableConvertor lets the external tests render tables without building an
// etcd-backed store.
var TableConvertor = tableConvertor{}
