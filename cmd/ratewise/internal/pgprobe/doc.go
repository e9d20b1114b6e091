// Package pgprobe checks a PostgreSQL database for storepostgres, the
// PostgreSQL store: whether the server's version, the connecting role's
// privileges and the schema ratewise, if it exists, let the store run as
// documented. Run reports each check as a Finding that says what it saw and
// what to change. It only reads (the server's settings, the catalogs and
// the has_*_privilege functions): it never creates the schema, migrates it
// or writes a row.
//
// It is the checks `ratewise doctor --postgres URL` prints, a package of
// the tool's so that storepostgres stays the store: it uses nothing of
// storepostgres but the schema's version (internal/pgschema).
package pgprobe
