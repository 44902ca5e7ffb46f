//! The typed InfluxQL syntax tree, and its printing back to canonical InfluxQL.
//!
//! Durations and time offsets are nanoseconds (`i64`). Identifiers are unquoted and unescaped.
//! `Display` quotes what needs quoting and adds exactly the parentheses operator precedence needs, so
//! that parsing the output gives back an equal tree.

use std::borrow::Cow;
use std::fmt::{self, Display, Formatter, Write as _};

use super::lexer::{format_duration, is_keyword};

/// One statement of a query.
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    Select(Box<SelectStatement>),
    /// `EXPLAIN [ANALYZE] [VERBOSE] SELECT ...`
    Explain(ExplainStatement),
    /// `SHOW DATABASES`
    ShowDatabases,
    /// `CREATE DATABASE name [WITH ...]`
    CreateDatabase(CreateDatabaseStatement),
    /// `DROP DATABASE name`
    DropDatabase {
        name: String,
    },
    /// `CREATE RETENTION POLICY name ON db DURATION d REPLICATION n [SHARD DURATION d] [DEFAULT]`
    CreateRetentionPolicy(RetentionPolicyStatement),
    /// `ALTER RETENTION POLICY name ON db [DURATION d] [REPLICATION n] [SHARD DURATION d] [DEFAULT]`
    /// (at least one option, in any order, each at most once)
    AlterRetentionPolicy(RetentionPolicyStatement),
    /// `SHOW RETENTION POLICIES [ON db]`
    ShowRetentionPolicies {
        database: Option<String>,
    },
    ShowMeasurements(ShowMeasurementsStatement),
    ShowTagKeys(ShowTagKeysStatement),
    ShowTagValues(ShowTagValuesStatement),
    ShowFieldKeys(ShowFieldKeysStatement),
    ShowSeries(ShowSeriesStatement),
    /// `SHOW {SERIES | MEASUREMENT | TAG KEY | TAG VALUES | FIELD KEY} [EXACT] CARDINALITY ...`
    ShowCardinality(ShowCardinalityStatement),
    /// `DROP MEASUREMENT name`
    DropMeasurement {
        name: String,
    },
    /// `DROP SERIES [FROM m, ...] [WHERE ...]` (at least one of the two)
    DropSeries(DropSeriesStatement),
    /// `DELETE [FROM m, ...] [WHERE ...]` (at least one of the two)
    Delete(DeleteStatement),
}

/// `SELECT fields [INTO target] FROM sources [WHERE condition] [GROUP BY dimensions] [fill(..)]
/// [ORDER BY time [ASC|DESC]] [LIMIT n] [OFFSET n] [SLIMIT n] [SOFFSET n] [tz('zone')]`
#[derive(Debug, Clone, PartialEq)]
pub struct SelectStatement {
    /// At least one.
    pub fields: Vec<Field>,
    /// `INTO` (parsed so it can be refused with a clear message).
    pub into: Option<Target>,
    /// At least one.
    pub from: Vec<Source>,
    pub condition: Option<Expr>,
    /// In the order written; at most one is [`Dimension::Time`].
    pub dimensions: Vec<Dimension>,
    /// `None` if no `fill()` was given (InfluxDB's default then is `fill(null)`).
    pub fill: Option<Fill>,
    /// `ORDER BY time DESC` (or `ORDER BY DESC`); ascending otherwise.
    pub order_desc: bool,
    /// As written; note that InfluxDB treats `LIMIT 0` like no limit.
    pub limit: Option<u64>,
    pub offset: Option<u64>,
    pub slimit: Option<u64>,
    pub soffset: Option<u64>,
    /// The zone name given to `tz('...')`, not validated.
    pub timezone: Option<String>,
}

/// One entry of the field list: `expr [AS alias]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// Never holds a comparison or logical operator (the parser refuses those in fields). May be a
    /// [`Expr::RegexLit`] (`SELECT /usage_.*/ FROM cpu`) or [`Expr::Wildcard`].
    pub expr: Expr,
    pub alias: Option<String>,
}

/// `INTO [[db.]rp.]measurement` or `INTO [db.]rp.:MEASUREMENT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub database: Option<String>,
    pub retention_policy: Option<String>,
    /// `None` for the `:MEASUREMENT` back-reference (same name as the source measurement).
    pub measurement: Option<String>,
}

/// A source in `FROM`.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    Measurement(Measurement),
    /// `FROM (SELECT ...)`
    Subquery(Box<SelectStatement>),
}

/// `[db.[rp].]name` or `[db.[rp].]/regex/`; empty database or retention policy parts (`db..m`) are
/// `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Measurement {
    pub database: Option<String>,
    pub retention_policy: Option<String>,
    pub name: MeasurementName,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MeasurementName {
    Name(String),
    /// A regex pattern (unanchored, as in InfluxDB) over measurement names.
    Regex(String),
}

/// An entry of `GROUP BY`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dimension {
    /// `time(interval[, offset])`; the interval is positive nanoseconds.
    Time { interval_ns: i64, offset: Option<TimeOffset> },
    /// A tag key (`GROUP BY host` or `"host"`; a `::tag` cast is dropped).
    Tag(String),
    /// `GROUP BY *`: every tag.
    Wildcard,
    /// `GROUP BY /re/`: every tag whose key matches.
    Regex(String),
}

/// The offset of `GROUP BY time(interval, offset)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeOffset {
    /// Nanoseconds, possibly negative.
    Duration(i64),
    /// `now()`: align the buckets to the query's now.
    Now,
}

/// `fill(...)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fill {
    /// `fill(null)`: empty intervals are null (InfluxDB's default).
    Null,
    /// `fill(none)`: empty intervals are left out.
    None,
    /// `fill(previous)`
    Previous,
    /// `fill(linear)`
    Linear,
    /// `fill(42)`
    Integer(i64),
    /// `fill(1.5)`
    Float(f64),
}

/// The type cast of a variable reference: `name::float`, `name::tag`, ...
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarType {
    Float,
    Integer,
    Unsigned,
    String,
    Boolean,
    /// `::field`: any field, never a tag.
    Field,
    /// `::tag`
    Tag,
}

/// The type restriction of a wildcard: `*::field`, `*::tag`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WildcardType {
    Field,
    Tag,
}

/// An expression. Parentheses leave no node: the tree shape is the grouping.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A field, tag or `time`. `name` is the identifier as written; segmented references
    /// (`a.b`) are joined with `.`.
    VarRef {
        name: String,
        data_type: Option<VarType>,
    },
    /// `name(args)`: `name` is lower-cased. Any name parses (validation is the translator's);
    /// `DISTINCT x` and `distinct(x)` are both `Call { name: "distinct", args: [x] }`, so
    /// `count(DISTINCT x)` is `count(distinct(x))`. `now()` is [`Expr::Now`], not a call.
    Call {
        name: String,
        args: Vec<Expr>,
    },
    Binary {
        op: BinaryOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// Unary minus of something that is not a numeric or duration literal (those fold into
    /// negative literals): `-usage`, `-(a + b)`, `-mean(x)`.
    Neg(Box<Expr>),
    IntegerLit(i64),
    /// An integer literal above `i64::MAX` (as InfluxDB's UnsignedLiteral).
    UnsignedLit(u64),
    /// A literal with a decimal point (`1.5`, `.5`, `90.0`); always finite.
    NumberLit(f64),
    /// A single-quoted string. Compared with `time` it is a time literal (see
    /// [`super::parse_time_literal`]); the parser keeps it a string.
    StringLit(String),
    BooleanLit(bool),
    /// Nanoseconds: `10s`, `1h30m`, `-15m`.
    DurationLit(i64),
    /// A regex pattern: after `=~`/`!~`, as a whole field, or as a whole call argument.
    RegexLit(String),
    /// `*`, `*::field`, `*::tag`.
    Wildcard(Option<WildcardType>),
    /// `now()`
    Now,
    /// `$name`: a bound parameter, left for the caller to substitute.
    BoundParam(String),
}

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    BitAnd,
    BitOr,
    BitXor,
    And,
    Or,
    Eq,
    /// `!=` (also written `<>`).
    NotEq,
    /// `=~`: the right side is always an [`Expr::RegexLit`].
    EqRegex,
    /// `!~`: the right side is always an [`Expr::RegexLit`].
    NotEqRegex,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

impl BinaryOp {
    /// Binding strength, as InfluxDB's: OR 1, AND 2, comparisons 3, `+ - | ^` 4, `* / % &` 5.
    /// Operators of equal strength associate to the left.
    pub fn precedence(self) -> u8 {
        match self {
            BinaryOp::Or => 1,
            BinaryOp::And => 2,
            BinaryOp::Eq
            | BinaryOp::NotEq
            | BinaryOp::EqRegex
            | BinaryOp::NotEqRegex
            | BinaryOp::Lt
            | BinaryOp::LtEq
            | BinaryOp::Gt
            | BinaryOp::GtEq => 3,
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::BitOr | BinaryOp::BitXor => 4,
            BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod | BinaryOp::BitAnd => 5,
        }
    }

    /// `= != =~ !~ < <= > >=`
    pub fn is_comparison(self) -> bool {
        self.precedence() == 3
    }

    /// `AND`, `OR`
    pub fn is_logical(self) -> bool {
        matches!(self, BinaryOp::And | BinaryOp::Or)
    }

    /// `+ - * / % & | ^`
    pub fn is_arithmetic(self) -> bool {
        self.precedence() >= 4
    }

    /// `=~`, `!~`
    pub fn is_regex(self) -> bool {
        matches!(self, BinaryOp::EqRegex | BinaryOp::NotEqRegex)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Mod => "%",
            BinaryOp::BitAnd => "&",
            BinaryOp::BitOr => "|",
            BinaryOp::BitXor => "^",
            BinaryOp::And => "AND",
            BinaryOp::Or => "OR",
            BinaryOp::Eq => "=",
            BinaryOp::NotEq => "!=",
            BinaryOp::EqRegex => "=~",
            BinaryOp::NotEqRegex => "!~",
            BinaryOp::Lt => "<",
            BinaryOp::LtEq => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::GtEq => ">=",
        }
    }
}

impl VarType {
    pub fn as_str(self) -> &'static str {
        match self {
            VarType::Float => "float",
            VarType::Integer => "integer",
            VarType::Unsigned => "unsigned",
            VarType::String => "string",
            VarType::Boolean => "boolean",
            VarType::Field => "field",
            VarType::Tag => "tag",
        }
    }
}

/// `EXPLAIN [ANALYZE] [VERBOSE] SELECT ...`
#[derive(Debug, Clone, PartialEq)]
pub struct ExplainStatement {
    pub analyze: bool,
    pub verbose: bool,
    pub statement: Box<SelectStatement>,
}

/// `CREATE DATABASE name [WITH [DURATION d] [REPLICATION n] [SHARD DURATION d] [NAME rp]]`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateDatabaseStatement {
    pub name: String,
    /// The `WITH` clause, if given (then at least one of its parts is set).
    pub retention_policy: Option<RetentionPolicySpec>,
}

/// The retention policy created along with a database.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetentionPolicySpec {
    /// Nanoseconds; `Some(0)` for `DURATION INF` (keep forever).
    pub duration_ns: Option<i64>,
    /// At least 1.
    pub replication: Option<u32>,
    /// Nanoseconds; `Some(0)` for `INF` (let the server choose).
    pub shard_duration_ns: Option<i64>,
    pub name: Option<String>,
}

/// `CREATE RETENTION POLICY` or `ALTER RETENTION POLICY`: the policy, its database and the options given.
/// For `CREATE`, `duration_ns` and `replication` are always set (InfluxDB requires both).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetentionPolicyStatement {
    pub name: String,
    pub database: String,
    /// Nanoseconds; `Some(0)` for `DURATION INF` (keep forever).
    pub duration_ns: Option<i64>,
    /// At least 1.
    pub replication: Option<u32>,
    /// Nanoseconds; `Some(0)` for `INF` (let the server choose).
    pub shard_duration_ns: Option<i64>,
    /// `DEFAULT`: make it the database's default policy.
    pub default: bool,
}

/// `SHOW MEASUREMENTS [ON db] [WITH MEASUREMENT (= name | =~ /re/)] [WHERE ...] [LIMIT n] [OFFSET n]`
#[derive(Debug, Clone, PartialEq)]
pub struct ShowMeasurementsStatement {
    pub database: Option<String>,
    /// The `WITH MEASUREMENT` filter: a name (`= m`) or a regex (`=~ /re/`). As in InfluxDB, which of
    /// `=` or `=~` was written does not matter, only whether a name or a regex follows.
    pub with_measurement: Option<Measurement>,
    pub condition: Option<Expr>,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
}

/// `SHOW TAG KEYS [ON db] [FROM m, ...] [WITH KEY ...] [WHERE ...] [LIMIT n] [OFFSET n] [SLIMIT n] [SOFFSET n]`
#[derive(Debug, Clone, PartialEq)]
pub struct ShowTagKeysStatement {
    pub database: Option<String>,
    pub from: Vec<Measurement>,
    pub with_key: Option<TagKeyFilter>,
    pub condition: Option<Expr>,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
    pub slimit: Option<u64>,
    pub soffset: Option<u64>,
}

/// `SHOW TAG VALUES [ON db] [FROM m, ...] WITH KEY ... [WHERE ...] [LIMIT n] [OFFSET n]`
#[derive(Debug, Clone, PartialEq)]
pub struct ShowTagValuesStatement {
    pub database: Option<String>,
    pub from: Vec<Measurement>,
    pub with_key: TagKeyFilter,
    pub condition: Option<Expr>,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
}

/// Which tag keys `WITH KEY` selects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TagKeyFilter {
    /// `= key`
    Eq(String),
    /// `!= key`
    NotEq(String),
    /// `IN (k1, k2, ...)`, at least one.
    In(Vec<String>),
    /// `=~ /re/`
    Regex(String),
    /// `!~ /re/`
    NotRegex(String),
}

/// `SHOW FIELD KEYS [ON db] [FROM m, ...] [LIMIT n] [OFFSET n]`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShowFieldKeysStatement {
    pub database: Option<String>,
    pub from: Vec<Measurement>,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
}

/// `SHOW SERIES [ON db] [FROM m, ...] [WHERE ...] [LIMIT n] [OFFSET n]`
#[derive(Debug, Clone, PartialEq)]
pub struct ShowSeriesStatement {
    pub database: Option<String>,
    pub from: Vec<Measurement>,
    pub condition: Option<Expr>,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
}

/// What a `SHOW ... CARDINALITY` statement counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardinalityKind {
    /// `SHOW SERIES [EXACT] CARDINALITY`
    Series,
    /// `SHOW MEASUREMENT [EXACT] CARDINALITY`
    Measurement,
    /// `SHOW TAG KEY [EXACT] CARDINALITY`
    TagKey,
    /// `SHOW TAG VALUES [EXACT] CARDINALITY WITH KEY ...`
    TagValues,
    /// `SHOW FIELD KEY [EXACT] CARDINALITY`
    FieldKey,
}

/// `SHOW <kind> [EXACT] CARDINALITY [ON db] [FROM m, ...] [WITH KEY ...] [WHERE ...] [GROUP BY ...]
/// [LIMIT n] [OFFSET n]`
#[derive(Debug, Clone, PartialEq)]
pub struct ShowCardinalityStatement {
    pub kind: CardinalityKind,
    pub exact: bool,
    pub database: Option<String>,
    pub from: Vec<Measurement>,
    /// Present exactly for [`CardinalityKind::TagValues`].
    pub with_key: Option<TagKeyFilter>,
    pub condition: Option<Expr>,
    pub dimensions: Vec<Dimension>,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
}

/// `DROP SERIES [FROM m, ...] [WHERE ...]`; the measurements have neither database nor retention
/// policy.
#[derive(Debug, Clone, PartialEq)]
pub struct DropSeriesStatement {
    pub from: Vec<Measurement>,
    pub condition: Option<Expr>,
}

/// `DELETE [FROM m, ...] [WHERE ...]`; the measurements have no database.
#[derive(Debug, Clone, PartialEq)]
pub struct DeleteStatement {
    pub from: Vec<Measurement>,
    pub condition: Option<Expr>,
}

impl SelectStatement {
    /// The `GROUP BY time(interval[, offset])` dimension, if any.
    pub fn group_by_time(&self) -> Option<(i64, Option<TimeOffset>)> {
        self.dimensions.iter().find_map(|d| match d {
            Dimension::Time { interval_ns, offset } => Some((*interval_ns, *offset)),
            _ => None,
        })
    }

    /// True if no field calls a function (a "raw" query returning points as stored).
    pub fn is_raw_query(&self) -> bool {
        !self.fields.iter().any(|f| f.expr.any(&mut |e| matches!(e, Expr::Call { .. })))
    }

    /// The tag keys of `GROUP BY` (without `*` or regexes), in order.
    pub fn group_by_tags(&self) -> impl Iterator<Item = &str> {
        self.dimensions.iter().filter_map(|d| match d {
            Dimension::Tag(t) => Some(t.as_str()),
            _ => None,
        })
    }
}

impl Expr {
    /// Calls `f` on this expression and every expression inside it, parents before children.
    pub fn walk<'a>(&'a self, f: &mut impl FnMut(&'a Expr)) {
        f(self);
        match self {
            Expr::Call { args, .. } => args.iter().for_each(|a| a.walk(f)),
            Expr::Binary { lhs, rhs, .. } => {
                lhs.walk(f);
                rhs.walk(f);
            }
            Expr::Neg(e) => e.walk(f),
            _ => {}
        }
    }

    /// True if `pred` holds for this expression or any expression inside it.
    pub fn any(&self, pred: &mut impl FnMut(&Expr) -> bool) -> bool {
        if pred(self) {
            return true;
        }
        match self {
            Expr::Call { args, .. } => args.iter().any(|a| a.any(pred)),
            Expr::Binary { lhs, rhs, .. } => lhs.any(pred) || rhs.any(pred),
            Expr::Neg(e) => e.any(pred),
            _ => false,
        }
    }

    /// True for a reference to the `time` column (`time`, `"time"`, any ASCII case).
    pub fn is_time_ref(&self) -> bool {
        matches!(self, Expr::VarRef { name, .. } if name.eq_ignore_ascii_case("time"))
    }

    /// A shorthand for building trees (translator tests, rewrites).
    pub fn binary(lhs: Expr, op: BinaryOp, rhs: Expr) -> Expr {
        Expr::Binary { op, lhs: Box::new(lhs), rhs: Box::new(rhs) }
    }

    /// A reference without a type cast.
    pub fn var(name: impl Into<String>) -> Expr {
        Expr::VarRef { name: name.into(), data_type: None }
    }
}

// ---------------------------------------------------------------------------------------------
// Printing.

/// Quotes an identifier if it is not a valid bare identifier (`[A-Za-z_][A-Za-z0-9_]*`, and not a
/// keyword): `cpu` → `cpu`, `my db` → `"my db"`, `from` → `"from"`, `a"b` → `"a\"b"`.
pub fn quote_ident(s: &str) -> Cow<'_, str> {
    let bare = s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !is_keyword(s);
    if bare {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    escape_into(&mut out, s, '"');
    out.push('"');
    Cow::Owned(out)
}

/// Single-quotes a string literal, escaping `\`, `'` and newlines.
pub fn quote_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    escape_into(&mut out, s, '\'');
    out.push('\'');
    out
}

fn escape_into(out: &mut String, s: &str, quote: char) {
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
}

struct Regex<'a>(&'a str);

impl Display for Regex<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_char('/')?;
        for c in self.0.chars() {
            if c == '/' {
                f.write_str("\\/")?;
            } else {
                f.write_char(c)?;
            }
        }
        f.write_char('/')
    }
}

struct Ident<'a>(&'a str);

impl Display for Ident<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(&quote_ident(self.0))
    }
}

fn write_list<T: Display>(f: &mut Formatter<'_>, items: &[T]) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{item}")?;
    }
    Ok(())
}

fn write_opt_u64(f: &mut Formatter<'_>, keyword: &str, n: Option<u64>) -> fmt::Result {
    match n {
        Some(n) => write!(f, " {keyword} {n}"),
        None => Ok(()),
    }
}

fn write_on(f: &mut Formatter<'_>, database: &Option<String>) -> fmt::Result {
    match database {
        Some(db) => write!(f, " ON {}", Ident(db)),
        None => Ok(()),
    }
}

fn write_from(f: &mut Formatter<'_>, from: &[Measurement]) -> fmt::Result {
    if from.is_empty() {
        return Ok(());
    }
    f.write_str(" FROM ")?;
    write_list(f, from)
}

fn write_where(f: &mut Formatter<'_>, condition: &Option<Expr>) -> fmt::Result {
    match condition {
        Some(c) => write!(f, " WHERE {c}"),
        None => Ok(()),
    }
}

fn write_group_by(f: &mut Formatter<'_>, dimensions: &[Dimension]) -> fmt::Result {
    if dimensions.is_empty() {
        return Ok(());
    }
    f.write_str(" GROUP BY ")?;
    write_list(f, dimensions)
}

impl Display for Statement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Statement::Select(s) => s.fmt(f),
            Statement::Explain(e) => {
                f.write_str("EXPLAIN ")?;
                if e.analyze {
                    f.write_str("ANALYZE ")?;
                }
                if e.verbose {
                    f.write_str("VERBOSE ")?;
                }
                e.statement.fmt(f)
            }
            Statement::ShowDatabases => f.write_str("SHOW DATABASES"),
            Statement::CreateDatabase(c) => c.fmt(f),
            Statement::DropDatabase { name } => write!(f, "DROP DATABASE {}", Ident(name)),
            Statement::CreateRetentionPolicy(rp) => write!(f, "CREATE {rp}"),
            Statement::AlterRetentionPolicy(rp) => write!(f, "ALTER {rp}"),
            Statement::ShowRetentionPolicies { database } => {
                f.write_str("SHOW RETENTION POLICIES")?;
                write_on(f, database)
            }
            Statement::ShowMeasurements(s) => s.fmt(f),
            Statement::ShowTagKeys(s) => s.fmt(f),
            Statement::ShowTagValues(s) => s.fmt(f),
            Statement::ShowFieldKeys(s) => s.fmt(f),
            Statement::ShowSeries(s) => s.fmt(f),
            Statement::ShowCardinality(s) => s.fmt(f),
            Statement::DropMeasurement { name } => write!(f, "DROP MEASUREMENT {}", Ident(name)),
            Statement::DropSeries(s) => {
                f.write_str("DROP SERIES")?;
                write_from(f, &s.from)?;
                write_where(f, &s.condition)
            }
            Statement::Delete(s) => {
                f.write_str("DELETE")?;
                write_from(f, &s.from)?;
                write_where(f, &s.condition)
            }
        }
    }
}

impl Display for SelectStatement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("SELECT ")?;
        write_list(f, &self.fields)?;
        if let Some(into) = &self.into {
            write!(f, " INTO {into}")?;
        }
        f.write_str(" FROM ")?;
        write_list(f, &self.from)?;
        write_where(f, &self.condition)?;
        write_group_by(f, &self.dimensions)?;
        if let Some(fill) = &self.fill {
            write!(f, " {fill}")?;
        }
        if self.order_desc {
            f.write_str(" ORDER BY time DESC")?;
        }
        write_opt_u64(f, "LIMIT", self.limit)?;
        write_opt_u64(f, "OFFSET", self.offset)?;
        write_opt_u64(f, "SLIMIT", self.slimit)?;
        write_opt_u64(f, "SOFFSET", self.soffset)?;
        if let Some(tz) = &self.timezone {
            write!(f, " tz({})", quote_string(tz))?;
        }
        Ok(())
    }
}

impl Display for Field {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        self.expr.fmt(f)?;
        if let Some(alias) = &self.alias {
            write!(f, " AS {}", Ident(alias))?;
        }
        Ok(())
    }
}

impl Display for Target {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match (&self.database, &self.retention_policy) {
            (Some(db), Some(rp)) => write!(f, "{}.{}.", Ident(db), Ident(rp))?,
            (Some(db), None) => write!(f, "{}..", Ident(db))?,
            (None, Some(rp)) => write!(f, "{}.", Ident(rp))?,
            (None, None) => {}
        }
        match &self.measurement {
            Some(m) => write!(f, "{}", Ident(m)),
            // `rp.:MEASUREMENT` needs a segment before the colon; an empty one is read as "none".
            None if self.database.is_none() && self.retention_policy.is_none() => f.write_str("\"\".:MEASUREMENT"),
            None => f.write_str(":MEASUREMENT"),
        }
    }
}

impl Display for Source {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Source::Measurement(m) => m.fmt(f),
            Source::Subquery(s) => write!(f, "({s})"),
        }
    }
}

impl Display for Measurement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match (&self.database, &self.retention_policy) {
            (Some(db), Some(rp)) => write!(f, "{}.{}.", Ident(db), Ident(rp))?,
            (Some(db), None) => write!(f, "{}..", Ident(db))?,
            (None, Some(rp)) => write!(f, "{}.", Ident(rp))?,
            (None, None) => {}
        }
        self.name.fmt(f)
    }
}

impl Display for MeasurementName {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            MeasurementName::Name(n) => Ident(n).fmt(f),
            MeasurementName::Regex(r) => Regex(r).fmt(f),
        }
    }
}

impl Display for Dimension {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Dimension::Time { interval_ns, offset } => {
                write!(f, "time({}", format_duration(*interval_ns))?;
                match offset {
                    Some(TimeOffset::Duration(d)) => write!(f, ", {}", format_duration(*d))?,
                    Some(TimeOffset::Now) => f.write_str(", now()")?,
                    None => {}
                }
                f.write_char(')')
            }
            Dimension::Tag(t) => Ident(t).fmt(f),
            Dimension::Wildcard => f.write_char('*'),
            Dimension::Regex(r) => Regex(r).fmt(f),
        }
    }
}

impl Display for Fill {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Fill::Null => f.write_str("fill(null)"),
            Fill::None => f.write_str("fill(none)"),
            Fill::Previous => f.write_str("fill(previous)"),
            Fill::Linear => f.write_str("fill(linear)"),
            Fill::Integer(n) => write!(f, "fill({n})"),
            Fill::Float(x) => write!(f, "fill({})", Number(*x)),
        }
    }
}

/// A float printed so that it reads back as a float: always with a decimal point, never with an
/// exponent.
struct Number(f64);

impl Display for Number {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let s = self.0.to_string();
        f.write_str(&s)?;
        if self.0.is_finite() && !s.contains('.') {
            f.write_str(".0")?;
        }
        Ok(())
    }
}

impl Display for BinaryOp {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Display for VarType {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Expr {
    /// The precedence of the node's top operator (atoms bind tightest).
    fn precedence(&self) -> u8 {
        match self {
            Expr::Binary { op, .. } => op.precedence(),
            _ => u8::MAX,
        }
    }
}

/// An operand of a binary operator, parenthesized if it binds more loosely than the operator
/// (or equally, on the right: operators associate to the left).
struct Operand<'a> {
    expr: &'a Expr,
    parens: bool,
}

impl Display for Operand<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.parens { write!(f, "({})", self.expr) } else { self.expr.fmt(f) }
    }
}

impl Display for Expr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Expr::VarRef { name, data_type } => {
                Ident(name).fmt(f)?;
                if let Some(t) = data_type {
                    write!(f, "::{t}")?;
                }
                Ok(())
            }
            Expr::Call { name, args } => {
                // `distinct` is a keyword, but `distinct(...)` reads as the call it prints.
                if name == "distinct" {
                    f.write_str(name)?
                } else {
                    Ident(name).fmt(f)?
                }
                f.write_char('(')?;
                write_list(f, args)?;
                f.write_char(')')
            }
            Expr::Binary { op, lhs, rhs } => {
                let prec = op.precedence();
                let lhs = Operand { expr: lhs, parens: lhs.precedence() < prec };
                let rhs = Operand { expr: rhs, parens: rhs.precedence() <= prec };
                write!(f, "{lhs} {op} {rhs}")
            }
            // A sign may precede an identifier, but `distinct` (printed bare) is a keyword.
            Expr::Neg(e) => match &**e {
                Expr::VarRef { .. } | Expr::Now => write!(f, "-{e}"),
                Expr::Call { name, .. } if name != "distinct" => write!(f, "-{e}"),
                _ => write!(f, "-({e})"),
            },
            Expr::IntegerLit(n) => write!(f, "{n}"),
            Expr::UnsignedLit(n) => write!(f, "{n}"),
            Expr::NumberLit(x) => Number(*x).fmt(f),
            Expr::StringLit(s) => f.write_str(&quote_string(s)),
            Expr::BooleanLit(b) => f.write_str(if *b { "true" } else { "false" }),
            Expr::DurationLit(d) => f.write_str(&format_duration(*d)),
            Expr::RegexLit(r) => Regex(r).fmt(f),
            Expr::Wildcard(None) => f.write_char('*'),
            Expr::Wildcard(Some(WildcardType::Field)) => f.write_str("*::field"),
            Expr::Wildcard(Some(WildcardType::Tag)) => f.write_str("*::tag"),
            Expr::Now => f.write_str("now()"),
            Expr::BoundParam(name) => write!(f, "${}", Ident(name)),
        }
    }
}

impl Display for CreateDatabaseStatement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "CREATE DATABASE {}", Ident(&self.name))?;
        let Some(rp) = &self.retention_policy else { return Ok(()) };
        f.write_str(" WITH")?;
        let inf_or = |d: i64| if d == 0 { "INF".to_string() } else { format_duration(d) };
        if let Some(d) = rp.duration_ns {
            write!(f, " DURATION {}", inf_or(d))?;
        }
        if let Some(n) = rp.replication {
            write!(f, " REPLICATION {n}")?;
        }
        if let Some(d) = rp.shard_duration_ns {
            write!(f, " SHARD DURATION {}", inf_or(d))?;
        }
        if let Some(name) = &rp.name {
            write!(f, " NAME {}", Ident(name))?;
        }
        Ok(())
    }
}

/// Prints `RETENTION POLICY name ON db` and the options, in InfluxDB's order (the verb is the caller's).
impl Display for RetentionPolicyStatement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "RETENTION POLICY {} ON {}", Ident(&self.name), Ident(&self.database))?;
        let inf_or = |d: i64| if d == 0 { "INF".to_string() } else { format_duration(d) };
        if let Some(d) = self.duration_ns {
            write!(f, " DURATION {}", inf_or(d))?;
        }
        if let Some(n) = self.replication {
            write!(f, " REPLICATION {n}")?;
        }
        if let Some(d) = self.shard_duration_ns {
            write!(f, " SHARD DURATION {}", inf_or(d))?;
        }
        if self.default {
            f.write_str(" DEFAULT")?;
        }
        Ok(())
    }
}

impl Display for ShowMeasurementsStatement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("SHOW MEASUREMENTS")?;
        write_on(f, &self.database)?;
        if let Some(m) = &self.with_measurement {
            let op = if matches!(m.name, MeasurementName::Regex(_)) { "=~" } else { "=" };
            write!(f, " WITH MEASUREMENT {op} {m}")?;
        }
        write_where(f, &self.condition)?;
        write_opt_u64(f, "LIMIT", self.limit)?;
        write_opt_u64(f, "OFFSET", self.offset)
    }
}

impl Display for TagKeyFilter {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("WITH KEY ")?;
        match self {
            TagKeyFilter::Eq(k) => write!(f, "= {}", Ident(k)),
            TagKeyFilter::NotEq(k) => write!(f, "!= {}", Ident(k)),
            TagKeyFilter::In(keys) => {
                f.write_str("IN (")?;
                for (i, k) in keys.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    Ident(k).fmt(f)?;
                }
                f.write_char(')')
            }
            TagKeyFilter::Regex(r) => write!(f, "=~ {}", Regex(r)),
            TagKeyFilter::NotRegex(r) => write!(f, "!~ {}", Regex(r)),
        }
    }
}

impl Display for ShowTagKeysStatement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("SHOW TAG KEYS")?;
        write_on(f, &self.database)?;
        write_from(f, &self.from)?;
        if let Some(k) = &self.with_key {
            write!(f, " {k}")?;
        }
        write_where(f, &self.condition)?;
        write_opt_u64(f, "LIMIT", self.limit)?;
        write_opt_u64(f, "OFFSET", self.offset)?;
        write_opt_u64(f, "SLIMIT", self.slimit)?;
        write_opt_u64(f, "SOFFSET", self.soffset)
    }
}

impl Display for ShowTagValuesStatement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("SHOW TAG VALUES")?;
        write_on(f, &self.database)?;
        write_from(f, &self.from)?;
        write!(f, " {}", self.with_key)?;
        write_where(f, &self.condition)?;
        write_opt_u64(f, "LIMIT", self.limit)?;
        write_opt_u64(f, "OFFSET", self.offset)
    }
}

impl Display for ShowFieldKeysStatement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("SHOW FIELD KEYS")?;
        write_on(f, &self.database)?;
        write_from(f, &self.from)?;
        write_opt_u64(f, "LIMIT", self.limit)?;
        write_opt_u64(f, "OFFSET", self.offset)
    }
}

impl Display for ShowSeriesStatement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("SHOW SERIES")?;
        write_on(f, &self.database)?;
        write_from(f, &self.from)?;
        write_where(f, &self.condition)?;
        write_opt_u64(f, "LIMIT", self.limit)?;
        write_opt_u64(f, "OFFSET", self.offset)
    }
}

impl Display for ShowCardinalityStatement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            CardinalityKind::Series => "SERIES",
            CardinalityKind::Measurement => "MEASUREMENT",
            CardinalityKind::TagKey => "TAG KEY",
            CardinalityKind::TagValues => "TAG VALUES",
            CardinalityKind::FieldKey => "FIELD KEY",
        };
        write!(f, "SHOW {what} ")?;
        if self.exact {
            f.write_str("EXACT ")?;
        }
        f.write_str("CARDINALITY")?;
        write_on(f, &self.database)?;
        write_from(f, &self.from)?;
        if let Some(k) = &self.with_key {
            write!(f, " {k}")?;
        }
        write_where(f, &self.condition)?;
        write_group_by(f, &self.dimensions)?;
        write_opt_u64(f, "LIMIT", self.limit)?;
        write_opt_u64(f, "OFFSET", self.offset)
    }
}
