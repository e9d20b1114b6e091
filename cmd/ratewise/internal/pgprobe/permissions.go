package pgprobe

import (
	"context"
	"fmt"
	"strings"
)

// tablePrivileges are what the store does to each of its tables: it
// decides in state and once (keys' states, request IDs), deletes their
// expired rows as it sweeps, and reads meta's version on first use.
var tablePrivileges = []struct {
	table string
	privs []string
}{
	{"state", []string{"SELECT", "INSERT", "UPDATE", "DELETE"}},
	{"once", []string{"SELECT", "INSERT", "UPDATE", "DELETE"}},
	{"meta", []string{"SELECT"}},
}

// permissions checks that the role may do what the store will do: create
// the schema when it is absent, use it when it exists, and migrate it when
// it is older.
func (p *prober) permissions(ctx context.Context) {
	var dbCreate, usage, schemaCreate bool
	err := p.pool.QueryRow(ctx, `SELECT has_database_privilege(current_database(), 'CREATE'),
		coalesce(has_schema_privilege(n.oid, 'USAGE'), false), coalesce(has_schema_privilege(n.oid, 'CREATE'), false)
		FROM (SELECT (SELECT oid FROM pg_namespace WHERE nspname = 'ratewise') AS oid) n`).
		Scan(&dbCreate, &usage, &schemaCreate)
	if err != nil {
		p.add("permissions", StatusFailure, "not checked: "+oneLine(err.Error()), "")
		return
	}
	if !p.schema.exists {
		if dbCreate {
			p.add(
				"permissions",
				StatusOK,
				fmt.Sprintf("%s may create the schema ratewise (CREATE on the database), as the store does on first use", p.who),
				"",
			)
		} else {
			p.add("permissions", StatusFailure, fmt.Sprintf("%s may not create the schema ratewise (no CREATE on the "+
				"database), which the store does on first use", p.who),
				fmt.Sprintf("GRANT CREATE ON DATABASE %s TO %s; or call storepostgres.Store.Migrate once as a role that "+
					"may, then grant %s the schema's use",
					p.database, p.role, p.role))
		}
		return
	}

	var lacks, grants []string
	if !usage {
		lacks = append(lacks, "USAGE on the schema ratewise")
		grants = append(grants, "GRANT USAGE ON SCHEMA ratewise TO "+p.role)
	}
	held, err := p.tables(ctx)
	if err != nil {
		p.add("permissions", StatusFailure, "not checked: "+oneLine(err.Error()), "")
		return
	}
	migrating := p.schema.migrates()
	// Tables that lack the same privileges share a phrase and a GRANT.
	var missingSets []string
	tablesMissing := map[string][]string{}
	for _, t := range tablePrivileges {
		privs := t.privs
		if migrating && t.table == "meta" {
			privs = []string{"SELECT", "INSERT", "DELETE"} // a migration rewrites the version
		}
		var missing []string
		for _, priv := range privs {
			if has, ok := held[t.table+" "+priv]; ok && !has {
				missing = append(missing, priv)
			}
		}
		if set := strings.Join(missing, ", "); set != "" {
			if tablesMissing[set] == nil {
				missingSets = append(missingSets, set)
			}
			tablesMissing[set] = append(tablesMissing[set], "ratewise."+t.table)
		}
	}
	for _, set := range missingSets {
		lacks = append(lacks, set+" on "+andList(tablesMissing[set]))
		grants = append(grants, fmt.Sprintf("GRANT %s ON %s TO %s", set, strings.Join(tablesMissing[set], ", "), p.role))
	}
	funcs, noExecute, notOwned, err := p.functions(ctx)
	if err != nil {
		p.add("permissions", StatusFailure, "not checked: "+oneLine(err.Error()), "")
		return
	}
	if len(noExecute) > 0 {
		lacks = append(lacks, fmt.Sprintf("EXECUTE on %d of its %d functions (%s)", len(noExecute), funcs, some(noExecute)))
		grants = append(grants, "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ratewise TO "+p.role)
	}
	if migrating {
		// The store's DDL runs CREATE SCHEMA IF NOT EXISTS, which asks for
		// CREATE on the database before it looks for the schema, creates
		// missing tables, and replaces every function, which only their
		// owner may.
		if !dbCreate {
			lacks = append(lacks, "CREATE on the database, to migrate the schema")
		}
		if !schemaCreate {
			lacks = append(lacks, "CREATE on the schema ratewise, to migrate it")
		}
		if len(notOwned) > 0 {
			lacks = append(
				lacks,
				fmt.Sprintf(
					"ownership of %d of its %d functions, to replace them as it migrates (%s)",
					len(notOwned),
					funcs,
					some(notOwned),
				),
			)
		}
	}

	if len(lacks) == 0 {
		found := fmt.Sprintf(
			"%s may use the schema ratewise: USAGE on it, SELECT, INSERT, UPDATE and DELETE on ratewise.state and "+
				"ratewise.once, "+
				"SELECT on ratewise.meta, EXECUTE on its %d functions",
			p.who,
			funcs,
		)
		if migrating {
			found += ", and migrate it"
		}
		p.add("permissions", StatusOK, found, "")
		return
	}
	change := "as " + p.schema.owner + ", the schema's owner: " + strings.Join(grants, "; ")
	if migrating && (!dbCreate || !schemaCreate || len(notOwned) > 0) {
		change = "call storepostgres.Store.Migrate once as " + p.schema.owner + ", the schema's owner, before the app starts"
		if len(grants) > 0 {
			change += "; and as the owner: " + strings.Join(grants, "; ")
		}
	}
	p.add("permissions", StatusFailure, p.who+" lacks "+strings.Join(lacks, "; "), change)
}

// tables returns, by "table PRIVILEGE", whether the role holds each
// privilege the store needs on each of its tables that exists.
// has_table_privilege is asked one privilege at a time: given several, it
// says whether any is held.
func (p *prober) tables(ctx context.Context) (map[string]bool, error) {
	rows, err := p.pool.Query(ctx, `SELECT c.relname, priv, has_table_privilege(c.oid, priv)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace,
			unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE']) AS priv
		WHERE n.nspname = 'ratewise' AND c.relkind IN ('r', 'p')`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	held := map[string]bool{}
	for rows.Next() {
		var table, priv string
		var has bool
		if err := rows.Scan(&table, &priv, &has); err != nil {
			return nil, err
		}
		held[table+" "+priv] = has
	}
	return held, rows.Err()
}

// functions counts the schema's functions and lists those the role may not
// execute, and those it does not own (nor inherits from their owner).
func (p *prober) functions(ctx context.Context) (n int, noExecute, notOwned []string, err error) {
	rows, err := p.pool.Query(
		ctx,
		`SELECT n.nspname || '.' || f.proname, has_function_privilege(f.oid, 'EXECUTE'), pg_has_role(f.proowner, 'USAGE')
		FROM pg_proc f JOIN pg_namespace n ON n.oid = f.pronamespace
		WHERE n.nspname = 'ratewise' ORDER BY 1, f.oid`,
	)
	if err != nil {
		return 0, nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var execute, owns bool
		if err := rows.Scan(&name, &execute, &owns); err != nil {
			return 0, nil, nil, err
		}
		n++
		if !execute {
			noExecute = append(noExecute, name)
		}
		if !owns {
			notOwned = append(notOwned, name)
		}
	}
	return n, noExecute, notOwned, rows.Err()
}

// some names the first few of names, and how many more there are.
func some(names []string) string {
	const shown = 2
	if len(names) <= shown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:shown], ", "), len(names)-shown)
}

// andList joins names as "a", "a and b" or "a, b and c".
func andList(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
