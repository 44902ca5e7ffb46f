//! Enough of PostgreSQL's system catalog for psql (`\l`, `\dt`, `\d table`), drivers and Grafana's
//! PostgreSQL data source: a `pg_catalog` schema whose tables are built from Sundial's catalog when a query
//! names them, and the system functions those tools call (`version()`, `current_schema()`,
//! `pg_table_is_visible`, `format_type`, …) as DataFusion UDFs.
//!
//! Naming: a Sundial database is the PostgreSQL *database* a client connects to and, inside it, the
//! *schema* its tables live in (`current_schema()` is the database name, `public` is an alias of it).
//! Object ids are synthetic but stable for a server's life: a table's oid is [`TABLE_OID_BASE`] + its
//! Sundial table id, a database's (and its namespace's) is [`DB_OID_BASE`] + its id.
//!
//! Catalog tables Sundial has nothing to put in (indexes, constraints, policies, triggers, publications,
//! inheritance, statistics objects…) exist and are empty; see [`EMPTY_TABLES`].

use std::collections::BTreeMap;
use std::sync::Arc;

use DataType::{Boolean as B, Int64 as I, Utf8 as S};
use async_trait::async_trait;
use parking_lot::Mutex;
use sundial_query::datafusion::arrow::array::{ArrayRef, RecordBatch};
use sundial_query::datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use sundial_query::datafusion::catalog::{
    CatalogProvider, MemTable, SchemaProvider, TableProvider,
};
use sundial_query::datafusion::common::{DataFusionError, Result, ScalarValue};
use sundial_query::datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};
use sundial_storage::Engine;
use sundial_storage::catalog::{ColumnKind, DbCatalog};
use sundial_storage::types::FieldType;

use super::types;

pub const TABLE_OID_BASE: i64 = 16_384;
pub const DB_OID_BASE: i64 = 1_000_000_000;
pub const PG_CATALOG_OID: i64 = 11;
pub const INFORMATION_SCHEMA_OID: i64 = 13_000;
pub const OWNER_OID: i64 = 10;
pub const OWNER_NAME: &str = "sundial";

/// The PostgreSQL version Sundial reports (`server_version`, `version()`): clients pick their catalog
/// queries by it, and Sundial answers the queries of this version.
pub const SERVER_VERSION: &str = "15.0";

/// Catalog tables that exist but are always empty (Sundial has no such objects). A query over them that
/// DataFusion cannot plan (PostgreSQL-only operators on columns we do not model) is answered with no rows.
pub const EMPTY_TABLES: &[&str] = &[
    "pg_index",
    "pg_constraint",
    "pg_attrdef",
    "pg_description",
    "pg_inherits",
    "pg_collation",
    "pg_policy",
    "pg_statistic_ext",
    "pg_publication",
    "pg_publication_rel",
    "pg_publication_namespace",
    "pg_trigger",
    "pg_rewrite",
    "pg_foreign_table",
    "pg_partitioned_table",
    "pg_sequence",
    "pg_extension",
    "pg_proc",
    "pg_views",
    "pg_matviews",
    "pg_enum",
    "pg_range",
    "pg_shdescription",
    "pg_depend",
    "pg_event_trigger",
    "pg_foreign_server",
    "pg_foreign_data_wrapper",
    "pg_opclass",
    "pg_operator",
    "pg_language",
    "pg_cast",
];

/// Per-session facts the catalog functions need.
#[derive(Debug)]
pub struct SessionFacts {
    pub db: String,
    pub user: String,
    pub pid: i32,
    pub settings: Arc<Mutex<BTreeMap<String, String>>>,
    pub registry: Arc<super::Registry>,
}

/// Builtin types: (oid, typname, `format_type` name, typlen, category).
pub const TYPES: &[(i64, &str, &str, i64, &str)] = &[
    (16, "bool", "boolean", 1, "B"),
    (17, "bytea", "bytea", -1, "U"),
    (18, "char", "\"char\"", 1, "Z"),
    (19, "name", "name", 64, "S"),
    (20, "int8", "bigint", 8, "N"),
    (21, "int2", "smallint", 2, "N"),
    (23, "int4", "integer", 4, "N"),
    (25, "text", "text", -1, "S"),
    (26, "oid", "oid", 4, "N"),
    (114, "json", "json", -1, "U"),
    (700, "float4", "real", 4, "N"),
    (701, "float8", "double precision", 8, "N"),
    (705, "unknown", "unknown", -2, "X"),
    (1000, "_bool", "boolean[]", -1, "A"),
    (1005, "_int2", "smallint[]", -1, "A"),
    (1007, "_int4", "integer[]", -1, "A"),
    (1009, "_text", "text[]", -1, "A"),
    (1016, "_int8", "bigint[]", -1, "A"),
    (1022, "_float8", "double precision[]", -1, "A"),
    (1042, "bpchar", "character", -1, "S"),
    (1043, "varchar", "character varying", -1, "S"),
    (1082, "date", "date", 4, "D"),
    (1083, "time", "time without time zone", 8, "D"),
    (1114, "timestamp", "timestamp without time zone", 8, "D"),
    (1184, "timestamptz", "timestamp with time zone", 8, "D"),
    (1186, "interval", "interval", 16, "T"),
    (1700, "numeric", "numeric", -1, "N"),
    (2950, "uuid", "uuid", 16, "U"),
    (3802, "jsonb", "jsonb", -1, "U"),
];

pub fn format_type_name(oid: i64) -> Option<&'static str> {
    TYPES.iter().find(|t| t.0 == oid).map(|t| t.2)
}

pub fn table_oid(table_id: u32) -> i64 {
    TABLE_OID_BASE + table_id as i64
}

pub fn db_oid(db_id: u32) -> i64 {
    DB_OID_BASE + db_id as i64
}

/// The PostgreSQL type oid of a Sundial column.
fn column_type_oid(kind: Option<ColumnKind>) -> i64 {
    let dt = match kind {
        None => types::pg_type(&DataType::Timestamp(TimeUnit::Nanosecond, None)),
        Some(ColumnKind::Tag) => types::pg_type(&DataType::Utf8),
        Some(ColumnKind::Field(ft)) => {
            types::pg_type(&sundial_query::provider::field_data_type(ft))
        }
    };
    dt.oid() as i64
}

/// The catalog a session sees: Sundial's databases, plus `pg_catalog`, plus `public` as an alias of the
/// session's database.
#[derive(Debug)]
pub struct PgCatalogProvider {
    inner: sundial_query::provider::SundialCatalog,
    engine: Arc<Engine>,
    facts: Arc<SessionFacts>,
}

impl PgCatalogProvider {
    pub fn new(engine: Arc<Engine>, facts: Arc<SessionFacts>) -> Self {
        PgCatalogProvider {
            inner: sundial_query::provider::SundialCatalog::new(engine.clone()),
            engine,
            facts,
        }
    }
}

impl CatalogProvider for PgCatalogProvider {
    fn schema_names(&self) -> Vec<String> {
        let mut names = self.inner.schema_names();
        names.push("pg_catalog".into());
        names
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        match name {
            "pg_catalog" => Some(Arc::new(PgCatalogSchema {
                engine: self.engine.clone(),
                facts: self.facts.clone(),
            })),
            "information_schema" => Some(Arc::new(PgCatalogSchema {
                engine: self.engine.clone(),
                facts: self.facts.clone(),
            })),
            "public" if self.engine.catalog().db("public").is_none() => {
                self.inner.schema(&self.facts.db)
            }
            _ => self.inner.schema(name),
        }
    }
}

/// `pg_catalog`: tables materialised from Sundial's catalog on each lookup (they are small).
#[derive(Debug)]
pub struct PgCatalogSchema {
    engine: Arc<Engine>,
    facts: Arc<SessionFacts>,
}

const TABLES: &[&str] = &[
    "tables",
    "columns",
    "schemata",
    "pg_namespace",
    "pg_class",
    "pg_attribute",
    "pg_type",
    "pg_database",
    "pg_roles",
    "pg_user",
    "pg_authid",
    "pg_settings",
    "pg_am",
    "pg_tablespace",
    "pg_stat_activity",
    "pg_tables",
];

#[async_trait]
impl SchemaProvider for PgCatalogSchema {
    fn table_names(&self) -> Vec<String> {
        TABLES
            .iter()
            .chain(EMPTY_TABLES)
            .map(|s| s.to_string())
            .collect()
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>, DataFusionError> {
        let Some((schema, rows)) = self.build(name) else {
            return Ok(None);
        };
        let columns: Vec<ArrayRef> = (0..schema.fields().len())
            .map(|c| {
                let field = schema.field(c);
                let values: Vec<ScalarValue> = rows.iter().map(|r| r[c].clone()).collect();
                if values.iter().all(ScalarValue::is_null) {
                    Ok(sundial_query::datafusion::arrow::array::new_null_array(
                        field.data_type(),
                        values.len(),
                    ))
                } else {
                    ScalarValue::iter_to_array(values).and_then(|a| {
                        if a.data_type() == field.data_type() {
                            Ok(a)
                        } else {
                            Ok(sundial_query::datafusion::arrow::compute::cast(
                                &a,
                                field.data_type(),
                            )?)
                        }
                    })
                }
            })
            .collect::<Result<_>>()?;
        let batch = RecordBatch::try_new(schema.clone(), columns)?;
        Ok(Some(Arc::new(MemTable::try_new(
            schema,
            vec![vec![batch]],
        )?)))
    }

    fn table_exist(&self, name: &str) -> bool {
        TABLES.contains(&name) || EMPTY_TABLES.contains(&name)
    }
}

fn i(v: i64) -> ScalarValue {
    ScalarValue::Int64(Some(v))
}
fn s(v: &str) -> ScalarValue {
    ScalarValue::Utf8(Some(v.to_string()))
}
fn b(v: bool) -> ScalarValue {
    ScalarValue::Boolean(Some(v))
}
fn null() -> ScalarValue {
    ScalarValue::Utf8(None)
}

/// Columns named `*acl` or `*options` are PostgreSQL arrays (always NULL here): `List(Utf8)`, so
/// `array_to_string(datacl, …)` plans.
fn schema_of(cols: &[(&str, DataType)]) -> SchemaRef {
    let list = DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)));
    Arc::new(Schema::new(
        cols.iter()
            .map(|(n, t)| {
                let t = if (n.ends_with("acl") || n.ends_with("options")) && *t == DataType::Utf8 {
                    list.clone()
                } else {
                    t.clone()
                };
                Field::new(*n, t, true)
            })
            .collect::<Vec<_>>(),
    ))
}

type Rows = Vec<Vec<ScalarValue>>;

impl PgCatalogSchema {
    fn build(&self, name: &str) -> Option<(SchemaRef, Rows)> {
        let cat = self.engine.catalog();
        let dbs = cat.dbs();
        Some(match name {
            "tables" => self.build_tables(&dbs),
            "schemata" => self.build_schemata(&dbs),
            "columns" => self.build_columns(&dbs),
            "pg_namespace" => self.build_namespace(&dbs),
            "pg_class" | "pg_tables" => self.build_class(&dbs, name),
            "pg_attribute" => self.build_attribute(&dbs),
            "pg_type" => self.build_type(),
            "pg_database" => self.build_database(&dbs),
            "pg_roles" | "pg_user" | "pg_authid" => self.build_roles(),
            "pg_settings" => self.build_settings(),
            "pg_am" => (
                schema_of(&[("oid", I), ("amname", S), ("amhandler", S), ("amtype", S)]),
                vec![vec![i(2), s("heap"), s("heap_tableam_handler"), s("t")]],
            ),
            "pg_tablespace" => (
                schema_of(&[
                    ("oid", I),
                    ("spcname", S),
                    ("spcowner", I),
                    ("spcacl", S),
                    ("spcoptions", S),
                ]),
                vec![vec![i(1663), s("pg_default"), i(OWNER_OID), null(), null()]],
            ),
            "pg_stat_activity" => self.build_stat_activity(),
            other if EMPTY_TABLES.contains(&other) => (empty_schema(other), Vec::new()),
            _ => return None,
        })
    }

    /// information_schema, PostgreSQL flavoured (type names as PostgreSQL spells them; Grafana picks
    /// time columns by them).
    fn build_tables(&self, dbs: &[&DbCatalog]) -> (SchemaRef, Rows) {
        let sch = schema_of(&[
            ("table_catalog", S),
            ("table_schema", S),
            ("table_name", S),
            ("table_type", S),
        ]);
        let mut rows = Vec::new();
        for d in dbs {
            for t in d.tables() {
                rows.push(vec![s(&d.name), s(&d.name), s(&t.name), s("BASE TABLE")]);
            }
        }
        (sch, rows)
    }

    fn build_schemata(&self, dbs: &[&DbCatalog]) -> (SchemaRef, Rows) {
        let sch = schema_of(&[("catalog_name", S), ("schema_name", S), ("schema_owner", S)]);
        let mut rows: Rows = dbs
            .iter()
            .map(|d| vec![s(&d.name), s(&d.name), s(OWNER_NAME)])
            .collect();
        rows.push(vec![s(&self.facts.db), s("pg_catalog"), s(OWNER_NAME)]);
        rows.push(vec![
            s(&self.facts.db),
            s("information_schema"),
            s(OWNER_NAME),
        ]);
        (sch, rows)
    }

    fn build_columns(&self, dbs: &[&DbCatalog]) -> (SchemaRef, Rows) {
        let sch = schema_of(&[
            ("table_catalog", S),
            ("table_schema", S),
            ("table_name", S),
            ("column_name", S),
            ("ordinal_position", I),
            ("column_default", S),
            ("is_nullable", S),
            ("data_type", S),
            ("udt_name", S),
        ]);
        let mut rows = Vec::new();
        for d in dbs {
            for t in d.tables() {
                let mut cols: Vec<(&str, Option<ColumnKind>)> = t
                    .columns()
                    .iter()
                    .filter(|c| &*c.name != "time")
                    .map(|c| (&*c.name, Some(c.kind)))
                    .collect();
                cols.sort_by(|a, b| a.0.cmp(b.0));
                cols.insert(0, ("time", None));
                for (n, (cname, kind)) in cols.iter().enumerate() {
                    let oid = column_type_oid(*kind);
                    let udt = TYPES
                        .iter()
                        .find(|t| t.0 == oid)
                        .map(|t| t.1)
                        .unwrap_or("text");
                    rows.push(vec![
                        s(&d.name),
                        s(&d.name),
                        s(&t.name),
                        s(cname),
                        i(n as i64 + 1),
                        null(),
                        s(if kind.is_none() { "NO" } else { "YES" }),
                        s(format_type_name(oid).unwrap_or("text")),
                        s(udt),
                    ]);
                }
            }
        }
        (sch, rows)
    }

    fn build_namespace(&self, dbs: &[&DbCatalog]) -> (SchemaRef, Rows) {
        let sch = schema_of(&[("oid", I), ("nspname", S), ("nspowner", I), ("nspacl", S)]);
        let mut rows = vec![
            vec![i(PG_CATALOG_OID), s("pg_catalog"), i(OWNER_OID), null()],
            vec![
                i(INFORMATION_SCHEMA_OID),
                s("information_schema"),
                i(OWNER_OID),
                null(),
            ],
        ];
        rows.extend(
            dbs.iter()
                .map(|d| vec![i(db_oid(d.id)), s(&d.name), i(OWNER_OID), null()]),
        );
        (sch, rows)
    }

    fn build_class(&self, dbs: &[&DbCatalog], name: &str) -> (SchemaRef, Rows) {
        let mut rows = Vec::new();
        for d in dbs {
            for t in d.tables() {
                rows.push((d, t));
            }
        }
        if name == "pg_tables" {
            let sch = schema_of(&[
                ("schemaname", S),
                ("tablename", S),
                ("tableowner", S),
                ("tablespace", S),
                ("hasindexes", B),
                ("hasrules", B),
                ("hastriggers", B),
                ("rowsecurity", B),
            ]);
            let rows = rows
                .iter()
                .map(|(d, t)| {
                    vec![
                        s(&d.name),
                        s(&t.name),
                        s(OWNER_NAME),
                        null(),
                        b(false),
                        b(false),
                        b(false),
                        b(false),
                    ]
                })
                .collect();
            return (sch, rows);
        }
        let sch = schema_of(&[
            ("oid", I),
            ("relname", S),
            ("relnamespace", I),
            ("reltype", I),
            ("reloftype", I),
            ("relowner", I),
            ("relam", I),
            ("relfilenode", I),
            ("reltablespace", I),
            ("relpages", I),
            ("reltuples", DataType::Float64),
            ("relallvisible", I),
            ("reltoastrelid", I),
            ("relhasindex", B),
            ("relisshared", B),
            ("relpersistence", S),
            ("relkind", S),
            ("relnatts", I),
            ("relchecks", I),
            ("relhasrules", B),
            ("relhastriggers", B),
            ("relhassubclass", B),
            ("relrowsecurity", B),
            ("relforcerowsecurity", B),
            ("relispopulated", B),
            ("relreplident", S),
            ("relispartition", B),
            ("relrewrite", I),
            ("relfrozenxid", I),
            ("relminmxid", I),
            ("relacl", S),
            ("reloptions", S),
            ("relpartbound", S),
        ]);
        let rows = rows
            .iter()
            .map(|(d, t)| {
                vec![
                    i(table_oid(t.id)),
                    s(&t.name),
                    i(db_oid(d.id)),
                    i(0),
                    i(0),
                    i(OWNER_OID),
                    i(2),
                    i(0),
                    i(0),
                    i(0),
                    ScalarValue::Float64(Some(-1.0)),
                    i(0),
                    i(0),
                    b(false),
                    b(false),
                    s("p"),
                    s("r"),
                    i(t.columns().len() as i64 + 1),
                    i(0),
                    b(false),
                    b(false),
                    b(false),
                    b(false),
                    b(false),
                    b(true),
                    s("d"),
                    b(false),
                    i(0),
                    i(0),
                    i(0),
                    null(),
                    null(),
                    null(),
                ]
            })
            .collect();
        (sch, rows)
    }

    fn build_attribute(&self, dbs: &[&DbCatalog]) -> (SchemaRef, Rows) {
        let sch = schema_of(&[
            ("attrelid", I),
            ("attname", S),
            ("atttypid", I),
            ("attstattarget", I),
            ("attlen", I),
            ("attnum", I),
            ("attndims", I),
            ("attcacheoff", I),
            ("atttypmod", I),
            ("attbyval", B),
            ("attalign", S),
            ("attstorage", S),
            ("attcompression", S),
            ("attnotnull", B),
            ("atthasdef", B),
            ("atthasmissing", B),
            ("attidentity", S),
            ("attgenerated", S),
            ("attisdropped", B),
            ("attislocal", B),
            ("attinhcount", I),
            ("attcollation", I),
            ("attacl", S),
            ("attoptions", S),
            ("attfdwoptions", S),
            ("attmissingval", S),
        ]);
        let mut rows = Vec::new();
        for d in dbs {
            for t in d.tables() {
                let mut cols: Vec<(&str, Option<ColumnKind>)> = t
                    .columns()
                    .iter()
                    .filter(|c| &*c.name != "time")
                    .map(|c| (&*c.name, Some(c.kind)))
                    .collect();
                cols.sort_by(|a, b| a.0.cmp(b.0));
                cols.insert(0, ("time", None));
                for (n, (cname, kind)) in cols.iter().enumerate() {
                    let oid = column_type_oid(*kind);
                    let len = TYPES.iter().find(|t| t.0 == oid).map(|t| t.3).unwrap_or(-1);
                    rows.push(vec![
                        i(table_oid(t.id)),
                        s(cname),
                        i(oid),
                        i(-1),
                        i(len),
                        i(n as i64 + 1),
                        i(0),
                        i(-1),
                        i(-1),
                        b(len > 0),
                        s("d"),
                        s("p"),
                        s(""),
                        b(kind.is_none()),
                        b(false),
                        b(false),
                        s(""),
                        s(""),
                        b(false),
                        b(true),
                        i(0),
                        i(if oid == 25 { 100 } else { 0 }),
                        null(),
                        null(),
                        null(),
                        null(),
                    ]);
                }
            }
        }
        (sch, rows)
    }

    fn build_type(&self) -> (SchemaRef, Rows) {
        let sch = schema_of(&[
            ("oid", I),
            ("typname", S),
            ("typnamespace", I),
            ("typowner", I),
            ("typlen", I),
            ("typbyval", B),
            ("typtype", S),
            ("typcategory", S),
            ("typispreferred", B),
            ("typisdefined", B),
            ("typdelim", S),
            ("typrelid", I),
            ("typelem", I),
            ("typarray", I),
            ("typinput", S),
            ("typoutput", S),
            ("typreceive", S),
            ("typsend", S),
            ("typbasetype", I),
            ("typtypmod", I),
            ("typndims", I),
            ("typcollation", I),
            ("typnotnull", B),
            ("typdefault", S),
            ("typacl", S),
        ]);
        let rows = TYPES
            .iter()
            .map(|(oid, name, _, len, cat)| {
                vec![
                    i(*oid),
                    s(name),
                    i(PG_CATALOG_OID),
                    i(OWNER_OID),
                    i(*len),
                    b(*len > 0 && *len <= 8),
                    s("b"),
                    s(cat),
                    b(false),
                    b(true),
                    s(","),
                    i(0),
                    i(0),
                    i(0),
                    s(&format!("{name}in")),
                    s(&format!("{name}out")),
                    s(&format!("{name}recv")),
                    s(&format!("{name}send")),
                    i(0),
                    i(-1),
                    i(0),
                    i(if *oid == 25 { 100 } else { 0 }),
                    b(false),
                    null(),
                    null(),
                ]
            })
            .collect();
        (sch, rows)
    }

    fn build_database(&self, dbs: &[&DbCatalog]) -> (SchemaRef, Rows) {
        let sch = schema_of(&[
            ("oid", I),
            ("datname", S),
            ("datdba", I),
            ("encoding", I),
            ("datlocprovider", S),
            ("datistemplate", B),
            ("datallowconn", B),
            ("datconnlimit", I),
            ("datcollate", S),
            ("datctype", S),
            ("daticulocale", S),
            ("daticurules", S),
            ("datcollversion", S),
            ("datacl", S),
            ("dattablespace", I),
        ]);
        let rows = dbs
            .iter()
            .map(|d| {
                vec![
                    i(db_oid(d.id)),
                    s(&d.name),
                    i(OWNER_OID),
                    i(6),
                    s("c"),
                    b(false),
                    b(true),
                    i(-1),
                    s("C"),
                    s("C"),
                    null(),
                    null(),
                    null(),
                    null(),
                    i(1663),
                ]
            })
            .collect();
        (sch, rows)
    }

    fn build_roles(&self) -> (SchemaRef, Rows) {
        let ts = DataType::Timestamp(TimeUnit::Nanosecond, Some("+00:00".into()));
        let sch = schema_of(&[
            ("oid", I),
            ("rolname", S),
            ("usename", S),
            ("usesysid", I),
            ("rolsuper", B),
            ("usesuper", B),
            ("rolinherit", B),
            ("rolcreaterole", B),
            ("rolcreatedb", B),
            ("usecreatedb", B),
            ("rolcanlogin", B),
            ("rolreplication", B),
            ("rolconnlimit", I),
            ("rolpassword", S),
            ("rolvaliduntil", ts.clone()),
            ("rolbypassrls", B),
            ("rolconfig", S),
        ]);
        let mut names = vec![OWNER_NAME.to_string()];
        if self.facts.user != OWNER_NAME {
            names.push(self.facts.user.clone());
        }
        let rows = names
            .iter()
            .enumerate()
            .map(|(n, u)| {
                let oid = if n == 0 { OWNER_OID } else { OWNER_OID + 1 };
                vec![
                    i(oid),
                    s(u),
                    s(u),
                    i(oid),
                    b(true),
                    b(true),
                    b(true),
                    b(true),
                    b(true),
                    b(true),
                    b(true),
                    b(false),
                    i(-1),
                    s("********"),
                    ScalarValue::TimestampNanosecond(None, Some("+00:00".into())),
                    b(true),
                    null(),
                ]
            })
            .collect();
        (sch, rows)
    }

    fn build_settings(&self) -> (SchemaRef, Rows) {
        let sch = schema_of(&[
            ("name", S),
            ("setting", S),
            ("unit", S),
            ("category", S),
            ("short_desc", S),
            ("context", S),
            ("vartype", S),
            ("source", S),
        ]);
        let settings = self.facts.settings.lock().clone();
        let rows = settings
            .iter()
            .map(|(k, v)| {
                vec![
                    s(k),
                    s(v),
                    null(),
                    s("Sundial"),
                    s(""),
                    s("user"),
                    s("string"),
                    s("session"),
                ]
            })
            .collect();
        (sch, rows)
    }

    fn build_stat_activity(&self) -> (SchemaRef, Rows) {
        let ts = DataType::Timestamp(TimeUnit::Nanosecond, Some("+00:00".into()));
        let cat = self.engine.catalog();
        let sch = schema_of(&[
            ("datid", I),
            ("datname", S),
            ("pid", I),
            ("usesysid", I),
            ("usename", S),
            ("application_name", S),
            ("client_addr", S),
            ("client_port", I),
            ("backend_start", ts.clone()),
            ("query_start", ts.clone()),
            ("state_change", ts.clone()),
            ("wait_event_type", S),
            ("wait_event", S),
            ("state", S),
            ("query", S),
            ("backend_type", S),
        ]);
        let rows = self
            .facts
            .registry
            .snapshot()
            .into_iter()
            .map(|a| {
                let tsv =
                    |v: Option<i64>| ScalarValue::TimestampNanosecond(v, Some("+00:00".into()));
                let datid = cat.db(&a.db).map(|d| db_oid(d.id)).unwrap_or(0);
                vec![
                    i(datid),
                    s(&a.db),
                    i(a.pid as i64),
                    i(OWNER_OID),
                    s(&a.user),
                    s(&a.application_name),
                    s(&a.client_addr),
                    i(a.client_port as i64),
                    tsv(Some(a.backend_start_ns)),
                    tsv(a.query_start_ns),
                    tsv(a.state_change_ns),
                    null(),
                    null(),
                    s(a.state),
                    s(&a.query),
                    s("client backend"),
                ]
            })
            .collect();
        (sch, rows)
    }
}

/// Columns of the always-empty tables: the ones psql and common tools select or join on.
fn empty_schema(name: &str) -> SchemaRef {
    use DataType::{Boolean as B, Int64 as I, Utf8 as S};
    let cols: Vec<(&str, DataType)> = match name {
        "pg_index" => vec![
            ("indexrelid", I),
            ("indrelid", I),
            ("indnatts", I),
            ("indisunique", B),
            ("indisprimary", B),
            ("indisclustered", B),
            ("indisvalid", B),
            ("indkey", S),
            ("indisreplident", B),
        ],
        "pg_constraint" => vec![
            ("oid", I),
            ("conname", S),
            ("connamespace", I),
            ("contype", S),
            ("conrelid", I),
            ("confrelid", I),
            ("conindid", I),
            ("conkey", S),
            ("confkey", S),
            ("conparentid", I),
            ("condeferrable", B),
            ("condeferred", B),
            ("convalidated", B),
        ],
        "pg_attrdef" => vec![("oid", I), ("adrelid", I), ("adnum", I), ("adbin", S)],
        "pg_description" | "pg_shdescription" => vec![
            ("objoid", I),
            ("classoid", I),
            ("objsubid", I),
            ("description", S),
        ],
        "pg_inherits" => vec![
            ("inhrelid", I),
            ("inhparent", I),
            ("inhseqno", I),
            ("inhdetachpending", B),
        ],
        "pg_collation" => vec![("oid", I), ("collname", S), ("collnamespace", I)],
        "pg_proc" => vec![
            ("oid", I),
            ("proname", S),
            ("pronamespace", I),
            ("prorettype", I),
            ("prokind", S),
            ("proargtypes", S),
        ],
        "pg_extension" => vec![
            ("oid", I),
            ("extname", S),
            ("extversion", S),
            ("extnamespace", I),
        ],
        "pg_views" | "pg_matviews" => vec![
            ("schemaname", S),
            ("viewname", S),
            ("matviewname", S),
            ("viewowner", S),
            ("definition", S),
        ],
        _ => vec![("oid", I)],
    };
    schema_of(&cols)
}

// ---------------------------------------------------------------------------------------------------
// Functions

type UdfFn = dyn Fn(&[ColumnarValue], usize) -> Result<ColumnarValue> + Send + Sync;

/// A scalar function given by a closure (system functions are tiny; one struct serves them all).
struct ClosureUdf {
    name: String,
    aliases: Vec<String>,
    signature: Signature,
    ret: DataType,
    f: Box<UdfFn>,
}

impl std::fmt::Debug for ClosureUdf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClosureUdf")
            .field("name", &self.name)
            .finish()
    }
}

impl PartialEq for ClosureUdf {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}
impl Eq for ClosureUdf {}
impl std::hash::Hash for ClosureUdf {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state)
    }
}

impl ScalarUDFImpl for ClosureUdf {
    fn name(&self) -> &str {
        &self.name
    }
    fn aliases(&self) -> &[String] {
        &self.aliases
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(self.ret.clone())
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        (self.f)(&args.args, args.number_rows)
    }
}

fn udf(
    name: &str,
    arities: &[usize],
    ret: DataType,
    f: impl Fn(&[ColumnarValue], usize) -> Result<ColumnarValue> + Send + Sync + 'static,
) -> ScalarUDF {
    let sigs: Vec<TypeSignature> = arities
        .iter()
        .map(|n| {
            if *n == 0 {
                TypeSignature::Nullary
            } else {
                TypeSignature::Any(*n)
            }
        })
        .collect();
    let signature = if sigs.len() == 1 {
        Signature::new(sigs[0].clone(), Volatility::Stable)
    } else {
        Signature::one_of(sigs, Volatility::Stable)
    };
    ScalarUDF::new_from_impl(ClosureUdf {
        name: name.to_string(),
        aliases: vec![format!("pg_catalog.{name}")],
        signature,
        ret,
        f: Box::new(f),
    })
}

fn constant(
    v: ScalarValue,
) -> impl Fn(&[ColumnarValue], usize) -> Result<ColumnarValue> + Send + Sync + 'static {
    move |_, _| Ok(ColumnarValue::Scalar(v.clone()))
}

/// Applies `f` to each row of the first argument (as Int64 or Utf8), producing `ret` values.
fn map_first(
    args: &[ColumnarValue],
    rows: usize,
    ret: &DataType,
    f: impl Fn(&ScalarValue) -> ScalarValue,
) -> Result<ColumnarValue> {
    let Some(first) = args.first() else {
        return Ok(ColumnarValue::Scalar(ScalarValue::try_from(ret)?));
    };
    match first {
        ColumnarValue::Scalar(v) => Ok(ColumnarValue::Scalar(f(v))),
        ColumnarValue::Array(a) => {
            let out: Vec<ScalarValue> = (0..rows.min(a.len()))
                .map(|r| ScalarValue::try_from_array(a, r).map(|v| f(&v)))
                .collect::<Result<_>>()?;
            if out.is_empty() {
                return Ok(ColumnarValue::Array(
                    sundial_query::datafusion::arrow::array::new_empty_array(ret),
                ));
            }
            Ok(ColumnarValue::Array(ScalarValue::iter_to_array(out)?))
        }
    }
}

fn as_i64(v: &ScalarValue) -> Option<i64> {
    match v.cast_to(&DataType::Int64).ok()? {
        ScalarValue::Int64(x) => x,
        _ => None,
    }
}

fn as_str(v: &ScalarValue) -> Option<String> {
    match v.cast_to(&DataType::Utf8).ok()? {
        ScalarValue::Utf8(x) => x,
        _ => None,
    }
}

/// Quotes an identifier when PostgreSQL would (`quote_ident`).
pub fn quote_ident(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}

fn size_pretty(n: i64) -> String {
    let units = ["bytes", "kB", "MB", "GB", "TB"];
    let mut v = n as f64;
    let mut u = 0;
    while v.abs() >= 10.0 * 1024.0 && u < units.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    format!("{} {}", v.round() as i64, units[u])
}

pub fn version_string() -> String {
    format!(
        "PostgreSQL {SERVER_VERSION} (Sundial {}) on x86_64-pc-linux-gnu, a time-series database speaking the PostgreSQL protocol",
        crate::VERSION
    )
}

/// Every system function a session registers (they replace DataFusion's `version()`).
pub fn functions(engine: Arc<Engine>, facts: Arc<SessionFacts>) -> Vec<ScalarUDF> {
    use DataType::{Boolean as B, Int64 as I, Utf8 as S};
    let db = facts.db.clone();
    let user = facts.user.clone();
    let mut v = vec![
        udf(
            "version",
            &[0],
            S,
            constant(ScalarValue::Utf8(Some(version_string()))),
        ),
        udf(
            "current_database",
            &[0],
            S,
            constant(ScalarValue::Utf8(Some(db.clone()))),
        ),
        udf(
            "current_schema",
            &[0],
            S,
            constant(ScalarValue::Utf8(Some(db.clone()))),
        ),
        udf(
            "current_user",
            &[0],
            S,
            constant(ScalarValue::Utf8(Some(user.clone()))),
        ),
        udf(
            "session_user",
            &[0],
            S,
            constant(ScalarValue::Utf8(Some(user.clone()))),
        ),
        udf(
            "current_role",
            &[0],
            S,
            constant(ScalarValue::Utf8(Some(user.clone()))),
        ),
        udf(
            "pg_backend_pid",
            &[0],
            I,
            constant(ScalarValue::Int64(Some(facts.pid as i64))),
        ),
        udf(
            "pg_is_in_recovery",
            &[0],
            B,
            constant(ScalarValue::Boolean(Some(false))),
        ),
        udf(
            "txid_current",
            &[0],
            I,
            constant(ScalarValue::Int64(Some(1))),
        ),
        udf(
            "pg_postmaster_start_time",
            &[0],
            DataType::Timestamp(TimeUnit::Nanosecond, Some("+00:00".into())),
            {
                let t = super::now_ns();
                constant(ScalarValue::TimestampNanosecond(
                    Some(t),
                    Some("+00:00".into()),
                ))
            },
        ),
        udf(
            "pg_type_is_visible",
            &[1],
            B,
            constant(ScalarValue::Boolean(Some(true))),
        ),
        udf(
            "pg_function_is_visible",
            &[1],
            B,
            constant(ScalarValue::Boolean(Some(true))),
        ),
        udf(
            "pg_get_userbyid",
            &[1],
            S,
            constant(ScalarValue::Utf8(Some(OWNER_NAME.into()))),
        ),
        udf(
            "obj_description",
            &[1, 2],
            S,
            constant(ScalarValue::Utf8(None)),
        ),
        udf(
            "col_description",
            &[2],
            S,
            constant(ScalarValue::Utf8(None)),
        ),
        udf(
            "shobj_description",
            &[2],
            S,
            constant(ScalarValue::Utf8(None)),
        ),
        udf("pg_get_expr", &[2, 3], S, constant(ScalarValue::Utf8(None))),
        udf(
            "pg_get_indexdef",
            &[1, 3],
            S,
            constant(ScalarValue::Utf8(None)),
        ),
        udf(
            "pg_get_constraintdef",
            &[1, 2],
            S,
            constant(ScalarValue::Utf8(None)),
        ),
        udf(
            "pg_get_viewdef",
            &[1, 2],
            S,
            constant(ScalarValue::Utf8(None)),
        ),
        udf(
            "pg_get_partkeydef",
            &[1],
            S,
            constant(ScalarValue::Utf8(None)),
        ),
        udf(
            "pg_tablespace_location",
            &[1],
            S,
            constant(ScalarValue::Utf8(Some(String::new()))),
        ),
        udf(
            "pg_encoding_to_char",
            &[1],
            S,
            constant(ScalarValue::Utf8(Some("UTF8".into()))),
        ),
        udf(
            "has_table_privilege",
            &[2, 3],
            B,
            constant(ScalarValue::Boolean(Some(true))),
        ),
        udf(
            "has_schema_privilege",
            &[2, 3],
            B,
            constant(ScalarValue::Boolean(Some(true))),
        ),
        udf(
            "has_database_privilege",
            &[2, 3],
            B,
            constant(ScalarValue::Boolean(Some(true))),
        ),
        udf(
            "has_any_column_privilege",
            &[2, 3],
            B,
            constant(ScalarValue::Boolean(Some(true))),
        ),
        udf("format_type", &[2], S, |args, rows| {
            map_first(args, rows, &DataType::Utf8, |v| {
                ScalarValue::Utf8(as_i64(v).map(|o| {
                    format_type_name(o)
                        .map(str::to_string)
                        .unwrap_or_else(|| "???".into())
                }))
            })
        }),
        udf("quote_ident", &[1], S, |args, rows| {
            map_first(args, rows, &DataType::Utf8, |v| {
                ScalarValue::Utf8(as_str(v).map(|s| quote_ident(&s)))
            })
        }),
        udf("pg_size_pretty", &[1], S, |args, rows| {
            map_first(args, rows, &DataType::Utf8, |v| {
                ScalarValue::Utf8(as_i64(v).map(size_pretty))
            })
        }),
    ];
    for name in [
        "pg_relation_size",
        "pg_total_relation_size",
        "pg_table_size",
        "pg_indexes_size",
        "pg_database_size",
    ] {
        v.push(udf(name, &[1], I, constant(ScalarValue::Int64(Some(0)))));
    }
    let f = facts.clone();
    v.push(udf("current_setting", &[1, 2], S, move |args, rows| {
        let settings = f.settings.lock().clone();
        map_first(args, rows, &DataType::Utf8, |v| {
            ScalarValue::Utf8(as_str(v).and_then(|k| settings.get(&k.to_lowercase()).cloned()))
        })
    }));
    let e = engine.clone();
    let vis_db = db.clone();
    v.push(udf("pg_table_is_visible", &[1], B, move |args, rows| {
        let cat = e.catalog();
        let visible: std::collections::HashSet<i64> = cat
            .db(&vis_db)
            .map(|d| d.tables().iter().map(|t| table_oid(t.id)).collect())
            .unwrap_or_default();
        drop(cat);
        map_first(args, rows, &DataType::Boolean, |v| {
            ScalarValue::Boolean(Some(
                as_i64(v).is_some_and(|o| visible.contains(&o) || o < TABLE_OID_BASE),
            ))
        })
    }));
    let e = engine;
    v.push(udf("to_regclass", &[1], I, move |args, rows| {
        let cat = e.catalog();
        let oids: std::collections::HashMap<String, i64> = cat
            .db(&db)
            .map(|d| {
                d.tables()
                    .iter()
                    .map(|t| (t.name.to_string(), table_oid(t.id)))
                    .collect()
            })
            .unwrap_or_default();
        drop(cat);
        map_first(args, rows, &DataType::Int64, |v| {
            ScalarValue::Int64(as_str(v).and_then(|n| oids.get(n.trim_matches('"')).copied()))
        })
    }));
    v
}

/// The oid of table `name` of database `db` (for `'name'::regclass`).
pub fn regclass(engine: &Engine, db: &str, name: &str) -> Option<i64> {
    let name = name.rsplit('.').next().unwrap_or(name).trim_matches('"');
    let cat = engine.catalog();
    cat.db(db)
        .and_then(|d| d.table(name))
        .map(|t| table_oid(t.id))
}

/// PostgreSQL name of a Sundial field type, for messages.
pub fn field_type_sql(ft: FieldType) -> &'static str {
    format_type_name(types::pg_type(&sundial_query::provider::field_data_type(ft)).oid() as i64)
        .unwrap_or("text")
}
