//! One connection's SQL session: a DataFusion context whose default schema is the connected database,
//! session settings, and the translation of each statement into something to run ([`Prepared`]).
//!
//! Statements Sundial answers itself: `SET`, `SHOW`, `BEGIN`/`COMMIT`/`ROLLBACK` (accepted; every write
//! is durable at once, there is no transaction to roll back), `DISCARD`, `DEALLOCATE`, `CREATE DATABASE`,
//! `DROP DATABASE`, `SHOW DATABASES`, `INSERT`, `COPY … FROM STDIN`. Everything else is planned by
//! DataFusion after [`super::rewrite`].

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
use pgwire::api::Type;
use sundial_query::QueryEngine;
use sundial_query::datafusion::arrow::array::{RecordBatch, StringArray};
use sundial_query::datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use sundial_query::datafusion::common::ScalarValue;
use sundial_query::datafusion::execution::SendableRecordBatchStream;
use sundial_query::datafusion::logical_expr::LogicalPlan;
use sundial_query::datafusion::prelude::SessionContext;
use sundial_query::datafusion::sql::parser::Statement as DFStatement;
use sundial_query::datafusion::sql::sqlparser::ast::{
    CopyLegacyCsvOption, CopyLegacyOption, CopyOption, CopySource, CopyTarget, Expr, ObjectName,
    ObjectType, SelectItem, Set, SetExpr, Statement, TableObject, Value, visit_relations,
};
use sundial_query::datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use sundial_query::datafusion::sql::sqlparser::parser::Parser;
use sundial_storage::Engine;

use super::cancel::QueryGuard;
use super::catalog::{self, SessionFacts};
use super::errors::{PgError, code, from_datafusion, from_query};
use super::ingest::{CopyFormat, CopyIn, Target};
use super::types::{self, pg_type};

/// Nesting depth the SQL parser accepts (deeper input is a syntax error, not a stack overflow).
pub const SQL_RECURSION_MAX: usize = 64;

/// A result column as RowDescription describes it.
#[derive(Clone, Debug)]
pub struct FieldDesc {
    pub name: String,
    pub ty: Type,
}

/// What a statement does when executed.
pub enum Kind {
    Empty,
    Query(LogicalPlan),
    Fixed {
        schema: SchemaRef,
        batches: Vec<RecordBatch>,
    },
    Set {
        name: String,
        value: Option<String>,
    },
    Tag(&'static str),
    Begin,
    Commit,
    Rollback,
    Database {
        sql: String,
        tag: &'static str,
    },
    /// `hints`: types of `$n` placed directly in a VALUES column of an existing column (0-based index).
    Insert {
        db: String,
        table: String,
        columns: Vec<String>,
        source: LogicalPlan,
        hints: Vec<(usize, DataType)>,
    },
    /// `COPY table|(query) TO STDOUT`: rows of `plan`, described by `fields`.
    CopyOut {
        plan: LogicalPlan,
        fields: Vec<FieldDesc>,
        format: CopyFormat,
    },
    Copy {
        db: String,
        table: String,
        columns: Vec<String>,
        format: CopyFormat,
    },
}

/// A parsed and planned statement (a prepared statement, or one statement of a simple query).
pub struct Prepared {
    pub sql: String,
    pub kind: Kind,
    /// Parameter types as ParameterDescription reports them.
    pub param_types: Vec<Type>,
    /// Types the client declared in Parse (`None`: let the server infer).
    pub declared: Vec<Option<Type>>,
    /// Types DataFusion inferred for `$n`.
    pub targets: Vec<Option<DataType>>,
    /// `None`: the statement returns no rows (NoData).
    pub fields: Option<Vec<FieldDesc>>,
}

/// What executing a statement produced.
pub enum Outcome {
    Stream(SendableRecordBatchStream),
    Batches(Vec<RecordBatch>),
    Command(String),
    CopyIn(Box<CopyIn>),
    CopyOut {
        stream: SendableRecordBatchStream,
        types: Vec<Type>,
        format: CopyFormat,
    },
    Empty,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tx {
    Idle,
    Block,
    Failed,
}

pub struct Session {
    pub engine: Arc<Engine>,
    pub query: QueryEngine,
    pub ctx: SessionContext,
    pub facts: Arc<SessionFacts>,
    pub tx: Tx,
}

/// Settings a fresh session starts with (SHOW answers them; SET changes them for the session).
pub fn default_settings(db: &str, user: &str, application_name: &str) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for (k, v) in [
        ("server_version", catalog::SERVER_VERSION),
        ("server_version_num", "150000"),
        ("server_encoding", "UTF8"),
        ("client_encoding", "UTF8"),
        ("datestyle", "ISO, MDY"),
        ("intervalstyle", "postgres"),
        ("timezone", "UTC"),
        ("integer_datetimes", "on"),
        ("standard_conforming_strings", "on"),
        ("transaction_isolation", "read committed"),
        ("default_transaction_isolation", "read committed"),
        ("transaction_read_only", "off"),
        ("default_transaction_read_only", "off"),
        ("in_hot_standby", "off"),
        ("is_superuser", "on"),
        ("max_identifier_length", "63"),
        ("extra_float_digits", "1"),
        ("statement_timeout", "0"),
        ("lc_collate", "C"),
        ("lc_ctype", "C"),
        ("max_connections", "1024"),
        ("bytea_output", "hex"),
    ] {
        m.insert(k.to_string(), v.to_string());
    }
    m.insert("search_path".into(), db.to_string());
    m.insert("session_authorization".into(), user.to_string());
    m.insert("application_name".into(), application_name.to_string());
    m
}

/// The name clients see for a setting (ParameterStatus, SHOW's column).
pub fn display_name(lower: &str) -> &str {
    match lower {
        "datestyle" => "DateStyle",
        "timezone" => "TimeZone",
        "intervalstyle" => "IntervalStyle",
        other => other,
    }
}

/// Parses SQL text with the PostgreSQL dialect.
pub fn parse_sql(sql: &str) -> Result<Vec<Statement>, PgError> {
    let dialect = PostgreSqlDialect {};
    Parser::new(&dialect)
        .with_recursion_limit(SQL_RECURSION_MAX)
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_statements())
        .map_err(|e| from_datafusion(&e.into(), sql))
}

fn object_name(n: &ObjectName) -> Vec<String> {
    n.0.iter()
        .map(|p| {
            p.as_ident()
                .map(|i| i.value.clone())
                .unwrap_or_else(|| p.to_string())
        })
        .collect()
}

fn expr_text(e: &Expr) -> String {
    match e {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => s.clone(),
            Value::Boolean(b) => {
                if *b {
                    "on".into()
                } else {
                    "off".into()
                }
            }
            other => other.to_string(),
        },
        Expr::Identifier(i) => i.value.clone(),
        other => other.to_string(),
    }
}

fn one_column(name: &str, values: Vec<String>) -> (SchemaRef, Vec<RecordBatch>) {
    let schema = Arc::new(Schema::new(vec![Field::new(name, DataType::Utf8, true)]));
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(StringArray::from(values))])
        .expect("one utf8 column");
    (schema, vec![batch])
}

fn fields_of(schema: &Schema) -> Vec<FieldDesc> {
    schema
        .fields()
        .iter()
        .map(|f| FieldDesc {
            name: f.name().clone(),
            ty: pg_type(f.data_type()),
        })
        .collect()
}

impl Session {
    pub fn new(engine: Arc<Engine>, query: QueryEngine, facts: Arc<SessionFacts>) -> Session {
        let ctx = query.session(Some(&facts.db));
        // information_schema comes from our catalog (PostgreSQL type names), not DataFusion's.
        ctx.state_ref()
            .write()
            .config_mut()
            .options_mut()
            .catalog
            .information_schema = false;
        ctx.register_catalog(
            sundial_query::CATALOG_NAME,
            Arc::new(catalog::PgCatalogProvider::new(
                engine.clone(),
                facts.clone(),
            )),
        );
        for f in catalog::functions(engine.clone(), facts.clone()) {
            ctx.register_udf(f);
        }
        Session {
            engine,
            query,
            ctx,
            facts,
            tx: Tx::Idle,
        }
    }

    pub fn db(&self) -> &str {
        &self.facts.db
    }

    pub fn settings(&self) -> &Arc<Mutex<BTreeMap<String, String>>> {
        &self.facts.settings
    }

    /// Plans one statement. `declared` are the parameter types of a Parse message.
    pub async fn prepare(
        &self,
        mut st: Statement,
        sql: &str,
        declared: Vec<Option<Type>>,
    ) -> Result<Prepared, PgError> {
        let (kind, fields) = self.classify(&mut st, sql).await?;
        let mut targets: Vec<Option<DataType>> = Vec::new();
        let plan = match &kind {
            Kind::Query(p) | Kind::Insert { source: p, .. } => Some(p),
            _ => None,
        };
        let hints = match &kind {
            Kind::Insert { hints, .. } => hints.clone(),
            _ => Vec::new(),
        };
        if let Some(plan) = plan {
            let found = plan
                .get_parameter_types()
                .map_err(|e| from_datafusion(&e, sql))?;
            for (name, ty) in found {
                let n: usize = name.trim_start_matches('$').parse().map_err(|_| {
                    PgError::new(
                        code::SYNTAX_ERROR,
                        format!(
                            "parameter {name}: only positional parameters $1, $2, … are supported"
                        ),
                    )
                })?;
                if n == 0 || n > u16::MAX as usize {
                    return Err(PgError::new(
                        code::SYNTAX_ERROR,
                        format!("parameter ${n} is out of range"),
                    ));
                }
                if targets.len() < n {
                    targets.resize(n, None);
                }
                targets[n - 1] = ty;
            }
        }
        for (i, ty) in hints {
            if let Some(slot @ None) = targets.get_mut(i) {
                *slot = Some(ty);
            }
        }
        if targets.len() < declared.len() {
            targets.resize(declared.len(), None);
        }
        let param_types = (0..targets.len())
            .map(|i| {
                declared
                    .get(i)
                    .cloned()
                    .flatten()
                    .or_else(|| targets[i].as_ref().map(pg_type))
                    .unwrap_or(Type::TEXT)
            })
            .collect();
        Ok(Prepared {
            sql: sql.to_string(),
            kind,
            param_types,
            declared,
            targets,
            fields,
        })
    }

    async fn classify(
        &self,
        st: &mut Statement,
        sql: &str,
    ) -> Result<(Kind, Option<Vec<FieldDesc>>), PgError> {
        let kind = match st {
            Statement::Set(set) => return Ok((self.set_kind(set)?, None)),
            Statement::ShowVariable { variable } => {
                let name = variable
                    .iter()
                    .map(|i| i.value.to_lowercase())
                    .collect::<Vec<_>>()
                    .join(" ");
                let (schema, batches) = self.show(&name)?;
                let fields = fields_of(&schema);
                return Ok((Kind::Fixed { schema, batches }, Some(fields)));
            }
            Statement::StartTransaction { .. } => Kind::Begin,
            Statement::Commit { .. } => Kind::Commit,
            Statement::Rollback { .. } => Kind::Rollback,
            Statement::Discard { .. } => Kind::Tag("DISCARD ALL"),
            Statement::Deallocate { .. } => Kind::Tag("DEALLOCATE"),
            Statement::CreateDatabase { .. } => Kind::Database {
                sql: st.to_string(),
                tag: "CREATE DATABASE",
            },
            Statement::Drop {
                object_type: ObjectType::Database | ObjectType::Schema,
                ..
            } => Kind::Database {
                sql: st.to_string(),
                tag: "DROP DATABASE",
            },
            Statement::ShowDatabases { .. } => {
                let fields = vec![FieldDesc {
                    name: "name".into(),
                    ty: Type::TEXT,
                }];
                return Ok((
                    Kind::Database {
                        sql: st.to_string(),
                        tag: "SHOW",
                    },
                    Some(fields),
                ));
            }
            Statement::CreateTable(_) => {
                return Err(PgError::unsupported("CREATE TABLE is not supported: Sundial creates a table on its first write")
                    .with_hint("INSERT INTO t (time, host, usage) VALUES (now(), 'a', 1.5) creates table t with tag host and field usage"));
            }
            Statement::Insert(ins) => self.classify_insert(ins, sql).await?,
            Statement::Copy {
                source,
                to,
                target,
                options,
                legacy_options,
                ..
            } => {
                let format = copy_format(options, legacy_options)?;
                return self.classify_copy(source, *to, target, format, sql).await;
            }
            _ => return self.classify_query(st, sql).await,
        };
        Ok((kind, None))
    }

    /// `INSERT INTO t [(cols)] VALUES … | SELECT …`: the source is planned by DataFusion.
    async fn classify_insert(
        &self,
        ins: &sundial_query::datafusion::sql::sqlparser::ast::Insert,
        sql: &str,
    ) -> Result<Kind, PgError> {
        let TableObject::TableName(name) = &ins.table else {
            return Err(PgError::unsupported("INSERT INTO a table function"));
        };
        let (db, table) = self.table_name(name);
        let columns: Vec<String> = ins
            .columns
            .iter()
            .map(|c| object_name(c).pop().unwrap_or_default())
            .collect();
        let Some(source) = ins.source.clone() else {
            return Err(PgError::unsupported("INSERT without VALUES or SELECT"));
        };
        let hints = self.insert_hints(&db, &table, &columns, &source);
        let mut q = Statement::Query(source);
        super::rewrite::rewrite(&mut q, &self.engine, self.db())?;
        let plan = self.plan(q, sql).await?;
        Ok(Kind::Insert {
            db,
            table,
            columns,
            source: plan,
            hints,
        })
    }

    /// `COPY t [(cols)] FROM STDIN` and `COPY t [(cols)] | (query) TO STDOUT`.
    async fn classify_copy(
        &self,
        source: &CopySource,
        to: bool,
        target: &CopyTarget,
        format: CopyFormat,
        sql: &str,
    ) -> Result<(Kind, Option<Vec<FieldDesc>>), PgError> {
        let (stdio, verb) = if to {
            (CopyTarget::Stdout, "TO")
        } else {
            (CopyTarget::Stdin, "FROM")
        };
        if *target != stdio {
            return Err(PgError::unsupported(format!(
                "COPY {verb} a server-side file or program is not supported; use COPY … {verb} {stdio}"
            )));
        }
        if to {
            let mut q = match source {
                CopySource::Query(q) => Statement::Query(q.clone()),
                CopySource::Table {
                    table_name,
                    columns,
                } => {
                    let cols = if columns.is_empty() {
                        "*".to_string()
                    } else {
                        columns
                            .iter()
                            .map(|c| c.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    };
                    parse_sql(&format!("SELECT {cols} FROM {table_name}"))?.remove(0)
                }
            };
            super::rewrite::rewrite(&mut q, &self.engine, self.db())?;
            let plan = self.plan(q, sql).await?;
            let fields = fields_of(plan.schema().as_arrow());
            return Ok((
                Kind::CopyOut {
                    plan,
                    fields,
                    format,
                },
                None,
            ));
        }
        let CopySource::Table {
            table_name,
            columns,
        } = source
        else {
            return Err(PgError::new(
                code::SYNTAX_ERROR,
                "COPY (query) FROM is not valid: COPY FROM needs a table",
            ));
        };
        let (db, table) = self.table_name(table_name);
        let columns = columns.iter().map(|c| c.value.clone()).collect();
        Ok((
            Kind::Copy {
                db,
                table,
                columns,
                format,
            },
            None,
        ))
    }

    /// Any other statement: planned by DataFusion after the PostgreSQL rewrites.
    async fn classify_query(
        &self,
        st: &mut Statement,
        sql: &str,
    ) -> Result<(Kind, Option<Vec<FieldDesc>>), PgError> {
        super::rewrite::rewrite(st, &self.engine, self.db())?;
        match self.plan(st.clone(), sql).await {
            Ok(plan) => {
                let fields = fields_of(plan.schema().as_arrow());
                let fields = if fields.is_empty() && !matches!(plan, LogicalPlan::Projection(_)) {
                    None
                } else {
                    Some(fields)
                };
                Ok((Kind::Query(plan), fields))
            }
            Err(e) => match empty_catalog_answer(st) {
                Some((schema, batches)) => {
                    let fields = fields_of(&schema);
                    Ok((Kind::Fixed { schema, batches }, Some(fields)))
                }
                None => Err(e),
            },
        }
    }

    /// Types for `$n` parameters that stand alone in a VALUES column whose table column exists, so drivers
    /// that bind by the described type (asyncpg, JDBC) send timestamps and numbers, not text.
    fn insert_hints(
        &self,
        db: &str,
        table: &str,
        columns: &[String],
        source: &sundial_query::datafusion::sql::sqlparser::ast::Query,
    ) -> Vec<(usize, DataType)> {
        let SetExpr::Values(values) = source.body.as_ref() else {
            return Vec::new();
        };
        let cat = self.engine.catalog();
        let t = cat.db(db).and_then(|d| d.table(table));
        let mut out = Vec::new();
        for row in &values.rows {
            for (k, e) in row.iter().enumerate() {
                let Expr::Value(v) = e else { continue };
                let Value::Placeholder(p) = &v.value else {
                    continue;
                };
                let Some(n) = p
                    .trim_start_matches('$')
                    .parse::<usize>()
                    .ok()
                    .filter(|n| *n > 0)
                else {
                    continue;
                };
                let Some(col) = columns.get(k) else { continue };
                let ty = if col == "time" {
                    Some(DataType::Timestamp(
                        sundial_query::datafusion::arrow::datatypes::TimeUnit::Nanosecond,
                        None,
                    ))
                } else {
                    t.and_then(|t| t.column(col)).map(|c| match c.kind {
                        sundial_storage::catalog::ColumnKind::Tag => DataType::Utf8,
                        sundial_storage::catalog::ColumnKind::Field(ft) => {
                            sundial_query::provider::field_data_type(ft)
                        }
                    })
                };
                if let Some(ty) = ty {
                    out.push((n - 1, ty));
                }
            }
        }
        out
    }

    async fn plan(&self, st: Statement, sql: &str) -> Result<LogicalPlan, PgError> {
        self.ctx
            .state()
            .statement_to_plan(DFStatement::Statement(Box::new(st)))
            .await
            .map_err(|e| from_datafusion(&e, sql))
    }

    /// `db.table` or `table` (in the session's database); `public.table` is the session's database.
    fn table_name(&self, n: &ObjectName) -> (String, String) {
        let mut parts = object_name(n);
        let table = parts.pop().unwrap_or_default();
        let db = match parts.pop() {
            Some(s) if s != "public" => s,
            _ => self.db().to_string(),
        };
        (db, table)
    }

    fn set_kind(&self, set: &Set) -> Result<Kind, PgError> {
        Ok(match set {
            Set::SingleAssignment {
                variable, values, ..
            } => {
                let name = object_name(variable).join(".").to_lowercase();
                let value = values.iter().map(expr_text).collect::<Vec<_>>().join(", ");
                let value = if value.eq_ignore_ascii_case("default") {
                    None
                } else {
                    Some(value)
                };
                Kind::Set { name, value }
            }
            Set::SetTimeZone { value, .. } => Kind::Set {
                name: "timezone".into(),
                value: Some(expr_text(value)),
            },
            Set::SetNames { charset_name, .. } => Kind::Set {
                name: "client_encoding".into(),
                value: Some(charset_name.value.clone()),
            },
            Set::SetTransaction { .. } | Set::SetSessionAuthorization(_) | Set::SetRole { .. } => {
                Kind::Tag("SET")
            }
            other => {
                return Err(PgError::unsupported(format!(
                    "unsupported SET form: {other}"
                )));
            }
        })
    }

    fn show(&self, name: &str) -> Result<(SchemaRef, Vec<RecordBatch>), PgError> {
        let settings = self.settings().lock();
        if name == "all" {
            let schema = Arc::new(Schema::new(vec![
                Field::new("name", DataType::Utf8, false),
                Field::new("setting", DataType::Utf8, true),
                Field::new("description", DataType::Utf8, true),
            ]));
            let names: Vec<&str> = settings.keys().map(|k| display_name(k)).collect();
            let values: Vec<&str> = settings.values().map(String::as_str).collect();
            let desc: Vec<&str> = names.iter().map(|_| "").collect();
            let batch = RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(StringArray::from(names)),
                    Arc::new(StringArray::from(values)),
                    Arc::new(StringArray::from(desc)),
                ],
            )
            .map_err(PgError::internal)?;
            return Ok((schema, vec![batch]));
        }
        let key = if name == "time zone" {
            "timezone"
        } else {
            name
        };
        match settings.get(key) {
            Some(v) => Ok(one_column(display_name(key), vec![v.clone()])),
            None => Err(PgError::new(
                code::UNDEFINED_OBJECT,
                format!("unrecognized configuration parameter \"{name}\""),
            )),
        }
    }

    /// Runs a prepared statement with bound parameters.
    pub async fn execute(
        &mut self,
        p: &Prepared,
        params: Vec<ScalarValue>,
        guard: &QueryGuard,
    ) -> Result<Outcome, PgError> {
        match &p.kind {
            Kind::Empty => Ok(Outcome::Empty),
            Kind::CopyOut {
                plan,
                fields,
                format,
            } => Ok(Outcome::CopyOut {
                stream: self.stream(plan.clone(), &p.sql, guard).await?,
                types: fields.iter().map(|f| f.ty.clone()).collect(),
                format: format.clone(),
            }),
            Kind::Query(plan) => {
                let plan = if params.is_empty() {
                    plan.clone()
                } else {
                    plan.clone()
                        .with_param_values(params)
                        .map_err(|e| from_datafusion(&e, &p.sql))?
                };
                Ok(Outcome::Stream(self.stream(plan, &p.sql, guard).await?))
            }
            Kind::Fixed { batches, .. } => Ok(Outcome::Batches(batches.clone())),
            Kind::Set { name, value } => {
                self.set(name, value.clone());
                Ok(Outcome::Command("SET".into()))
            }
            Kind::Tag(t) => Ok(Outcome::Command(t.to_string())),
            Kind::Begin => {
                if self.tx == Tx::Idle {
                    self.tx = Tx::Block;
                }
                Ok(Outcome::Command("BEGIN".into()))
            }
            Kind::Commit => {
                let failed = self.tx == Tx::Failed;
                self.tx = Tx::Idle;
                Ok(Outcome::Command(if failed {
                    "ROLLBACK".into()
                } else {
                    "COMMIT".into()
                }))
            }
            Kind::Rollback => {
                self.tx = Tx::Idle;
                Ok(Outcome::Command("ROLLBACK".into()))
            }
            Kind::Database { sql, tag } => {
                let out = self
                    .query
                    .sql(Some(self.db()), sql)
                    .await
                    .map_err(|e| from_query(&e, sql))?;
                if *tag == "SHOW" {
                    Ok(Outcome::Batches(out.batches))
                } else {
                    Ok(Outcome::Command(tag.to_string()))
                }
            }
            Kind::Insert {
                db,
                table,
                columns,
                source,
                ..
            } => {
                let plan = if params.is_empty() {
                    source.clone()
                } else {
                    source
                        .clone()
                        .with_param_values(params)
                        .map_err(|e| from_datafusion(&e, &p.sql))?
                };
                let df = self
                    .ctx
                    .execute_logical_plan(plan)
                    .await
                    .map_err(|e| from_datafusion(&e, &p.sql))?;
                let batches = df
                    .collect()
                    .await
                    .map_err(|e| from_datafusion(&e, &p.sql))?;
                let mut target = Target::resolve(&self.engine, db, table, columns.clone())?;
                let rows = target.rows_from_batches(&batches)?;
                let engine = self.engine.clone();
                let n = tokio::task::spawn_blocking(move || {
                    target.write(&engine, &rows, super::now_ns())
                })
                .await
                .map_err(|e| PgError::internal(format!("write task failed: {e}")))??;
                Ok(Outcome::Command(format!("INSERT 0 {n}")))
            }
            Kind::Copy {
                db,
                table,
                columns,
                format,
            } => {
                let target = Target::resolve(&self.engine, db, table, columns.clone())?;
                Ok(Outcome::CopyIn(Box::new(CopyIn::new(
                    target,
                    format.clone(),
                ))))
            }
        }
    }

    /// Executes a logical plan as a cancelable stream driven by its own task.
    async fn stream(
        &self,
        plan: LogicalPlan,
        sql: &str,
        guard: &QueryGuard,
    ) -> Result<SendableRecordBatchStream, PgError> {
        let df = self
            .ctx
            .execute_logical_plan(plan)
            .await
            .map_err(|e| from_datafusion(&e, sql))?;
        let task_ctx = Arc::new(df.task_ctx());
        let physical = df
            .create_physical_plan()
            .await
            .map_err(|e| from_datafusion(&e, sql))?;
        let physical =
            super::cancel::wrap(physical, guard).map_err(|e| from_datafusion(&e, sql))?;
        let stream = sundial_query::datafusion::physical_plan::execute_stream(physical, task_ctx)
            .map_err(|e| from_datafusion(&e, sql))?;
        Ok(super::cancel::spawn_stream(stream))
    }

    fn set(&self, name: &str, value: Option<String>) {
        let mut s = self.settings().lock();
        match value {
            Some(v) => {
                s.insert(name.to_string(), v);
            }
            None => {
                let defaults = default_settings(&self.facts.db, &self.facts.user, "");
                match defaults.get(name) {
                    Some(d) => s.insert(name.to_string(), d.clone()),
                    None => s.remove(name),
                };
            }
        }
    }

    /// Decodes the parameters of a Bind message for `p`.
    pub fn bind_params(
        &self,
        p: &Prepared,
        name: &str,
        formats: &[i16],
        values: &[Option<bytes::Bytes>],
    ) -> Result<Vec<ScalarValue>, PgError> {
        if values.len() != p.param_types.len() {
            return Err(PgError::protocol(format!(
                "bind message supplies {} parameters, but prepared statement \"{name}\" requires {}",
                values.len(),
                p.param_types.len()
            )));
        }
        let formats = match formats.len() {
            0 => vec![types::Format::Text; values.len()],
            1 => vec![
                if formats[0] == 1 {
                    types::Format::Binary
                } else {
                    types::Format::Text
                };
                values.len()
            ],
            n if n == values.len() => formats
                .iter()
                .map(|f| {
                    if *f == 1 {
                        types::Format::Binary
                    } else {
                        types::Format::Text
                    }
                })
                .collect(),
            n => {
                return Err(PgError::protocol(format!(
                    "bind message has {n} parameter formats but {} parameters",
                    values.len()
                )));
            }
        };
        values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                // The described type (declared by the client, else inferred) is what a binary value is in.
                types::decode_param(
                    i,
                    v.as_deref(),
                    formats[i],
                    Some(&p.param_types[i]),
                    p.targets[i].as_ref(),
                )
            })
            .collect()
    }
}

fn copy_format(options: &[CopyOption], legacy: &[CopyLegacyOption]) -> Result<CopyFormat, PgError> {
    let mut f = CopyFormat::default();
    let mut delimiter = None;
    let mut null = None;
    for o in options {
        match o {
            CopyOption::Format(name) => match name.value.to_lowercase().as_str() {
                "csv" => f.csv = true,
                "text" => f.csv = false,
                "binary" => f.binary = true,
                other => {
                    return Err(PgError::unsupported(format!(
                        "COPY format {other} is not supported (text and csv are)"
                    )));
                }
            },
            CopyOption::Delimiter(c) => delimiter = Some(*c),
            CopyOption::Null(s) => null = Some(s.clone()),
            CopyOption::Header(h) => f.header = *h,
            CopyOption::Quote(c) => f.quote = *c as u8,
            CopyOption::Escape(c) => f.escape = *c as u8,
            CopyOption::Encoding(e)
                if e.eq_ignore_ascii_case("utf8") || e.eq_ignore_ascii_case("utf-8") => {}
            other => {
                return Err(PgError::unsupported(format!(
                    "COPY option {other} is not supported"
                )));
            }
        }
    }
    for o in legacy {
        match o {
            CopyLegacyOption::Csv(opts) => {
                f.csv = true;
                for c in opts {
                    match c {
                        CopyLegacyCsvOption::Header => f.header = true,
                        CopyLegacyCsvOption::Quote(q) => f.quote = *q as u8,
                        CopyLegacyCsvOption::Escape(e) => f.escape = *e as u8,
                        other => {
                            return Err(PgError::unsupported(format!(
                                "COPY option {other} is not supported"
                            )));
                        }
                    }
                }
            }
            CopyLegacyOption::Delimiter(c) => delimiter = Some(*c),
            CopyLegacyOption::Null(s) => null = Some(s.clone()),
            CopyLegacyOption::Header => f.header = true,
            other => {
                return Err(PgError::unsupported(format!(
                    "COPY option {other} is not supported"
                )));
            }
        }
    }
    if f.csv {
        f.delimiter = b',';
        f.null = String::new();
    }
    if let Some(d) = delimiter {
        if !d.is_ascii() {
            return Err(PgError::unsupported(
                "COPY delimiter must be a single one-byte character",
            ));
        }
        f.delimiter = d as u8;
    }
    if let Some(n) = null {
        f.null = n;
    }
    Ok(f)
}

/// A query over catalog tables Sundial keeps empty, which DataFusion could not plan (PostgreSQL-only
/// operators or columns): the answer is no rows, with the select list's names as text columns.
fn empty_catalog_answer(st: &Statement) -> Option<(SchemaRef, Vec<RecordBatch>)> {
    let mut touches_empty = false;
    let _ = visit_relations(st, |n| {
        if let Some(last) = n.0.last().and_then(|p| p.as_ident()) {
            if catalog::EMPTY_TABLES.contains(&last.value.as_str()) {
                touches_empty = true;
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    if !touches_empty {
        return None;
    }
    let Statement::Query(q) = st else { return None };
    let mut body = q.body.as_ref();
    while let SetExpr::SetOperation { left, .. } = body {
        body = left.as_ref();
    }
    let names: Vec<String> = match body {
        SetExpr::Select(s) => s
            .projection
            .iter()
            .map(|item| match item {
                SelectItem::ExprWithAlias { alias, .. } => alias.value.clone(),
                SelectItem::UnnamedExpr(Expr::Identifier(i)) => i.value.clone(),
                SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => {
                    parts.last().map(|i| i.value.clone()).unwrap_or_default()
                }
                SelectItem::UnnamedExpr(Expr::Function(f)) => {
                    f.name.0.last().map(|p| p.to_string()).unwrap_or_default()
                }
                _ => "?column?".to_string(),
            })
            .collect(),
        _ => vec!["?column?".to_string()],
    };
    let schema = Arc::new(Schema::new(
        names
            .iter()
            .map(|n| Field::new(n, DataType::Utf8, true))
            .collect::<Vec<_>>(),
    ));
    Some((schema, Vec::new()))
}
