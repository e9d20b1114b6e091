// Package pgschema holds the version of the PostgreSQL store's schema: the
// store creates and migrates it, and `ratewise doctor --postgres` checks a
// database against it.
package pgschema

// Version is the version of the schema the store creates. A database whose
// schema has another version is migrated by the store's statements, which
// replace every function.
const Version = 5

// Compatible is the oldest version of the store whose statements keep
// working against this schema: the functions they call are kept, and
// decide as they did. Version 5 kept version 4's batch function.
const Compatible = 4
