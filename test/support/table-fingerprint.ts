// What a refused request must leave alone: every base table of the current schema, read in one
// statement. The table list is read once per database handle (the schema is migrated before the
// first snapshot and never changes inside a test file), so a snapshot costs one round trip however
// many tables the migrations made; reading them one statement each made the "changed nothing" checks
// of the hostile-input cases one of the slower parts of the suite.
import type { Database } from '../../store/db.ts';

const tableNames = new WeakMap<Database, Promise<string[]>>();

function tablesOf(db: Database): Promise<string[]> {
  let names = tableNames.get(db);
  if (names === undefined) {
    names = db
      .query<{ name: string }>(
        `SELECT table_name AS name FROM information_schema.tables
          WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`,
      )
      .then(({ rows }) => rows.map(({ name }) => name));
    // A failed read is not remembered: the next snapshot asks again.
    names.catch(() => tableNames.delete(db));
    tableNames.set(db, names);
  }
  return names;
}

const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`;
const literal = (name: string) => `'${name.replaceAll("'", "''")}'`;

/** Each table's rows, hashed (md5 of the ordered row texts): equal strings, equal contents. */
export async function tableContents(db: Database): Promise<string> {
  const sql = (await tablesOf(db))
    .map(
      (name) =>
        `SELECT ${literal(name)} AS t, md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) AS h FROM ${quoted(name)} x`,
    )
    .join(' UNION ALL ');
  return JSON.stringify((await db.query(sql)).rows);
}

/** Each table's row count, by table name. */
export async function tableCounts(db: Database): Promise<Record<string, number>> {
  const sql = (await tablesOf(db))
    .map((name) => `SELECT ${literal(name)} AS t, count(*)::int AS n FROM ${quoted(name)}`)
    .join(' UNION ALL ');
  const counts: Record<string, number> = {};
  for (const row of (await db.query<{ t: string; n: number }>(sql)).rows) counts[row.t] = row.n;
  return counts;
}
