//! PostgreSQL-only syntax that DataFusion does not plan, rewritten on the parsed AST before planning.
//!
//! What tools send (psql's `\d` queries, drivers, Grafana) and what it becomes:
//! - `a OPERATOR(pg_catalog.~) b` → `a ~ b` (any `OPERATOR(schema.op)` of a known operator);
//! - `x COLLATE pg_catalog.default` → `x`;
//! - `pg_catalog.f(…)` → `f(…)` (system functions are registered under both names anyway);
//! - casts to PostgreSQL's object-identifier types: `'cpu'::regclass` → the table's oid,
//!   `x::regclass`/`::oid`/`::xid` → `BIGINT`, `x::regtype` → `format_type(x, NULL)`, `::regproc`,
//!   `::regnamespace`, `::name`, `::"char"`, `::pg_catalog.text` → `TEXT`, and other `pg_catalog.<type>` →
//!   the type;
//! - scalar, `EXISTS` and `IN` subqueries reading only always-empty catalog tables → `NULL`, `false`, `false`;
//! - Grafana's `quote_ident(table_schema) IN (SELECT … current_setting('search_path') …)` →
//!   `IN (current_schema())`;
//! - unqualified `pg_class`, `pg_namespace`, … → `pg_catalog.pg_class` unless a table of that name exists.

use std::ops::ControlFlow;

use sundial_query::datafusion::sql::sqlparser::ast::{
    BinaryOperator, CastKind, DataType as SqlType, Expr, Function, FunctionArg, FunctionArgExpr,
    FunctionArgumentList, FunctionArguments, Ident, ObjectName, ObjectNamePart, Statement, Value,
    ValueWithSpan, visit_expressions_mut, visit_relations_mut,
};
use sundial_query::datafusion::sql::sqlparser::tokenizer::Span;
use sundial_storage::Engine;

use super::catalog;
use super::errors::{PgError, code};

fn name_parts(n: &ObjectName) -> Vec<String> {
    n.0.iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => i.value.clone(),
            other => other.to_string(),
        })
        .collect()
}

fn ident_name(parts: &[&str]) -> ObjectName {
    ObjectName(
        parts
            .iter()
            .map(|p| ObjectNamePart::Identifier(Ident::new(*p)))
            .collect(),
    )
}

fn number(v: i64) -> Expr {
    Expr::Value(ValueWithSpan {
        value: Value::Number(v.to_string(), false),
        span: Span::empty(),
    })
}

fn null() -> Expr {
    Expr::Value(ValueWithSpan {
        value: Value::Null,
        span: Span::empty(),
    })
}

fn string_literal(e: &Expr) -> Option<String> {
    match e {
        Expr::Value(ValueWithSpan {
            value: Value::SingleQuotedString(s),
            ..
        }) => Some(s.clone()),
        _ => None,
    }
}

fn cast(expr: Expr, data_type: SqlType) -> Expr {
    Expr::Cast {
        kind: CastKind::DoubleColon,
        expr: Box::new(expr),
        data_type,
        array: false,
        format: None,
    }
}

fn call(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Function(Function {
        name: ident_name(&[name]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: args
                .into_iter()
                .map(|a| FunctionArg::Unnamed(FunctionArgExpr::Expr(a)))
                .collect(),
            clauses: vec![],
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    })
}

/// What a cast to `ty` becomes, if it is a PostgreSQL-only type.
enum CastRewrite {
    Keep,
    To(SqlType),
    RegClass,
    RegType,
}

fn classify_type(ty: &SqlType) -> CastRewrite {
    let name = match ty {
        SqlType::Regclass => return CastRewrite::RegClass,
        SqlType::Custom(n, _) => name_parts(n)
            .last()
            .cloned()
            .unwrap_or_default()
            .to_lowercase(),
        _ => return CastRewrite::Keep,
    };
    match name.as_str() {
        "regclass" => CastRewrite::RegClass,
        "regtype" => CastRewrite::RegType,
        "oid" | "xid" | "xid8" | "cid" | "tid" | "regoper" | "regoperator" => {
            CastRewrite::To(SqlType::BigInt(None))
        }
        "regproc" | "regprocedure" | "regnamespace" | "regrole" | "name" | "char" | "text"
        | "bpchar" | "varchar" | "int2vector" | "oidvector" | "aclitem" | "pg_node_tree"
        | "regconfig" => CastRewrite::To(SqlType::Text),
        "int2" => CastRewrite::To(SqlType::SmallInt(None)),
        "int4" => CastRewrite::To(SqlType::Int(None)),
        "int8" => CastRewrite::To(SqlType::BigInt(None)),
        "float4" => CastRewrite::To(SqlType::Real),
        "float8" => CastRewrite::To(SqlType::DoublePrecision),
        "bool" => CastRewrite::To(SqlType::Boolean),
        "numeric" => CastRewrite::To(SqlType::DoublePrecision),
        "timestamptz" => CastRewrite::To(SqlType::Timestamp(
            None,
            sundial_query::datafusion::sql::sqlparser::ast::TimezoneInfo::Tz,
        )),
        "timestamp" => CastRewrite::To(SqlType::Timestamp(
            None,
            sundial_query::datafusion::sql::sqlparser::ast::TimezoneInfo::None,
        )),
        "date" => CastRewrite::To(SqlType::Date),
        _ => CastRewrite::Keep,
    }
}

fn custom_operator(parts: &[String]) -> Option<BinaryOperator> {
    Some(match parts.last()?.as_str() {
        "~" => BinaryOperator::PGRegexMatch,
        "~*" => BinaryOperator::PGRegexIMatch,
        "!~" => BinaryOperator::PGRegexNotMatch,
        "!~*" => BinaryOperator::PGRegexNotIMatch,
        "~~" => BinaryOperator::PGLikeMatch,
        "~~*" => BinaryOperator::PGILikeMatch,
        "!~~" => BinaryOperator::PGNotLikeMatch,
        "!~~*" => BinaryOperator::PGNotILikeMatch,
        "=" => BinaryOperator::Eq,
        "<>" | "!=" => BinaryOperator::NotEq,
        "<" => BinaryOperator::Lt,
        "<=" => BinaryOperator::LtEq,
        ">" => BinaryOperator::Gt,
        ">=" => BinaryOperator::GtEq,
        "||" => BinaryOperator::StringConcat,
        "+" => BinaryOperator::Plus,
        "-" => BinaryOperator::Minus,
        _ => return None,
    })
}

/// Rewrites `st` in place for database `db`.
pub fn rewrite(st: &mut Statement, engine: &Engine, db: &str) -> Result<(), PgError> {
    let mut failure: Option<PgError> = None;
    let _ = visit_expressions_mut(st, |e| {
        if let Err(err) = rewrite_expr(e, engine, db) {
            failure = Some(err);
            return ControlFlow::Break(());
        }
        ControlFlow::<()>::Continue(())
    });
    if let Some(f) = failure {
        return Err(f);
    }
    let _ = visit_relations_mut(st, |name| {
        let parts = name_parts(name);
        if parts.len() == 1 && parts[0].starts_with("pg_") {
            let is_table = engine
                .catalog()
                .db(db)
                .is_some_and(|d| d.table(&parts[0]).is_some());
            if !is_table {
                *name = ident_name(&["pg_catalog", &parts[0]]);
            }
        }
        if parts.len() == 2 && parts[0] == "information_schema" && parts[1] == "role_table_grants" {
            // not modelled; leave it for the planner to reject.
        }
        ControlFlow::<()>::Continue(())
    });
    Ok(())
}

/// True if every relation `q` reads is a catalog table Sundial keeps empty.
fn reads_only_empty_tables(q: &sundial_query::datafusion::sql::sqlparser::ast::Query) -> bool {
    let mut any = false;
    let mut only_empty = true;
    let _ = sundial_query::datafusion::sql::sqlparser::ast::visit_relations(q, |n| {
        any = true;
        let last =
            n.0.last()
                .and_then(|p| p.as_ident())
                .map(|i| i.value.clone())
                .unwrap_or_default();
        if !catalog::EMPTY_TABLES.contains(&last.as_str()) {
            only_empty = false;
        }
        ControlFlow::<()>::Continue(())
    });
    any && only_empty
}

/// True if `q` is a plain SELECT whose FROM inner-joins an always-empty catalog table: it yields no row.
fn yields_no_rows(q: &sundial_query::datafusion::sql::sqlparser::ast::Query) -> bool {
    use sundial_query::datafusion::sql::sqlparser::ast::{JoinOperator, SetExpr, TableFactor};
    if reads_only_empty_tables(q) {
        return true;
    }
    let SetExpr::Select(sel) = q.body.as_ref() else {
        return false;
    };
    let is_empty = |f: &TableFactor| match f {
        TableFactor::Table { name, .. } => name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .is_some_and(|i| catalog::EMPTY_TABLES.contains(&i.value.as_str())),
        _ => false,
    };
    let mut found = false;
    for twj in &sel.from {
        found |= is_empty(&twj.relation);
        for j in &twj.joins {
            match &j.join_operator {
                JoinOperator::Join(_) | JoinOperator::Inner(_) | JoinOperator::CrossJoin(_) => {
                    found |= is_empty(&j.relation)
                }
                _ => return false,
            }
        }
    }
    found
}

fn boolean(v: bool) -> Expr {
    Expr::Value(ValueWithSpan {
        value: Value::Boolean(v),
        span: Span::empty(),
    })
}

fn rewrite_expr(e: &mut Expr, engine: &Engine, db: &str) -> Result<(), PgError> {
    match e {
        // Subqueries over always-empty catalog tables have a known answer; psql's `\d` correlates them,
        // which DataFusion only plans for aggregates.
        // Grafana's schema filter computes the search_path entries with array subscripts over
        // generate_series; the search path is always the session's database.
        Expr::InSubquery {
            expr,
            subquery,
            negated,
        } if subquery
            .to_string()
            .contains("current_setting('search_path')") =>
        {
            *e = Expr::InList {
                expr: expr.clone(),
                list: vec![call("current_schema", vec![])],
                negated: *negated,
            };
        }
        Expr::Subquery(q) if yields_no_rows(q) => *e = null(),
        Expr::Exists { subquery, negated } if yields_no_rows(subquery) => *e = boolean(*negated),
        Expr::InSubquery {
            subquery, negated, ..
        } if yields_no_rows(subquery) => *e = boolean(*negated),
        Expr::BinaryOp { op, .. } => {
            if let BinaryOperator::PGCustomBinaryOperator(parts) = op {
                if let Some(new) = custom_operator(parts) {
                    *op = new;
                }
            }
        }
        Expr::Collate { expr, .. } => {
            let inner = std::mem::replace(expr.as_mut(), null());
            *e = inner;
        }
        Expr::Function(f) => {
            let parts = name_parts(&f.name);
            if parts.len() == 2 && parts[0].eq_ignore_ascii_case("pg_catalog") {
                f.name = ident_name(&[&parts[1]]);
            }
        }
        Expr::Cast {
            expr, data_type, ..
        } => match classify_type(data_type) {
            CastRewrite::Keep => {}
            CastRewrite::To(t) => *data_type = t,
            CastRewrite::RegClass => {
                if let Some(name) = string_literal(expr) {
                    let oid = catalog::regclass(engine, db, &name).ok_or_else(|| {
                        PgError::new(
                            code::UNDEFINED_TABLE,
                            format!("relation \"{name}\" does not exist"),
                        )
                    })?;
                    *e = number(oid);
                } else if let Ok(n) = expr.to_string().parse::<i64>() {
                    *e = number(n);
                } else {
                    *data_type = SqlType::BigInt(None);
                }
            }
            CastRewrite::RegType => {
                let inner = std::mem::replace(expr.as_mut(), null());
                *e = call(
                    "format_type",
                    vec![cast(inner, SqlType::BigInt(None)), null()],
                );
            }
        },
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sundial_query::datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use sundial_query::datafusion::sql::sqlparser::parser::Parser;

    fn rw(sql: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::open(sundial_storage::EngineConfig::new(dir.path())).unwrap();
        let mut st = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        rewrite(&mut st, &engine, "db").unwrap();
        st.to_string()
    }

    #[test]
    fn psql_describe_idioms_become_plain_sql() {
        assert_eq!(
            rw(
                "SELECT c.oid FROM pg_catalog.pg_class c WHERE c.relname OPERATOR(pg_catalog.~) '^(cpu)$' COLLATE pg_catalog.default AND pg_catalog.pg_table_is_visible(c.oid)"
            ),
            "SELECT c.oid FROM pg_catalog.pg_class c WHERE c.relname ~ '^(cpu)$' AND pg_table_is_visible(c.oid)"
        );
        assert_eq!(
            rw("SELECT x::pg_catalog.regtype::pg_catalog.text FROM pg_type"),
            "SELECT format_type(x::BIGINT, NULL)::TEXT FROM pg_catalog.pg_type"
        );
    }
}
