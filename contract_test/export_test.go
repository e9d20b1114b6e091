package contract

// ReferenceStore is referenceStore, for the suite's own matrix, which runs
// every rule against it (stores_test.go).
var ReferenceStore = referenceStore
