//! The InfluxQL parser: recursive descent over statements, precedence climbing over expressions.
//!
//! It follows InfluxDB 1.x's grammar (influxql `parser.go`) and its error messages
//! (`found X, expected Y`), and checks at parse time what InfluxDB checks while compiling a query
//! when the typed AST has no room for the mistake (e.g. `GROUP BY time(mean(x))`).

use super::ast::{
    BinaryOp, CardinalityKind, CreateDatabaseStatement, DeleteStatement, Dimension, DropSeriesStatement,
    ExplainStatement, Expr, Field, Fill, Measurement, MeasurementName, RetentionPolicySpec, RetentionPolicyStatement,
    SelectStatement,
    ShowCardinalityStatement, ShowFieldKeysStatement, ShowMeasurementsStatement, ShowSeriesStatement,
    ShowTagKeysStatement, ShowTagValuesStatement, Source, Statement, TagKeyFilter, Target, TimeOffset, VarType,
    WildcardType,
};
use super::lexer::{Keyword as Kw, Lexer, Tok, Token, parse_duration};
use super::{EXPR_DEPTH_MAX, ParseError, QUERY_BYTES_MAX, SUBQUERY_DEPTH_MAX};

/// What InfluxDB says it expected where an expression must start.
const EXPECTED_EXPR: &[&str] = &["identifier", "string", "number", "bool"];

type Result<T> = std::result::Result<T, ParseError>;

/// An expression and the depth of its tree (a leaf is 1).
type Parsed = (Expr, usize);

pub(crate) struct Parser<'a> {
    src: &'a str,
    lex: Lexer<'a>,
    /// The next token, once looked at.
    peeked: Option<Token>,
    /// Parentheses, calls and unary minus currently open.
    nesting: usize,
    /// Subqueries currently open.
    subqueries: usize,
}

fn binary_op(tok: &Tok) -> Option<BinaryOp> {
    Some(match tok {
        Tok::Add => BinaryOp::Add,
        Tok::Sub => BinaryOp::Sub,
        Tok::Mul => BinaryOp::Mul,
        Tok::Div => BinaryOp::Div,
        Tok::Mod => BinaryOp::Mod,
        Tok::BitAnd => BinaryOp::BitAnd,
        Tok::BitOr => BinaryOp::BitOr,
        Tok::BitXor => BinaryOp::BitXor,
        Tok::Keyword(Kw::And) => BinaryOp::And,
        Tok::Keyword(Kw::Or) => BinaryOp::Or,
        Tok::Eq => BinaryOp::Eq,
        Tok::Neq => BinaryOp::NotEq,
        Tok::EqRegex => BinaryOp::EqRegex,
        Tok::NeqRegex => BinaryOp::NotEqRegex,
        Tok::Lt => BinaryOp::Lt,
        Tok::Lte => BinaryOp::LtEq,
        Tok::Gt => BinaryOp::Gt,
        Tok::Gte => BinaryOp::GtEq,
        _ => return None,
    })
}

/// How a call argument starts.
enum ArgStart {
    Regex(Parsed),
    Expr,
    End,
}

fn non_empty(s: String) -> Option<String> {
    if s.is_empty() { None } else { Some(s) }
}

impl<'a> Parser<'a> {
    pub(crate) fn new(src: &'a str) -> Result<Parser<'a>> {
        if src.len() > QUERY_BYTES_MAX {
            let msg = format!("query too large: {} bytes, at most {QUERY_BYTES_MAX} allowed", src.len());
            return Err(ParseError::new(src, 0, msg));
        }
        Ok(Parser { src, lex: Lexer::new(src), peeked: None, nesting: 0, subqueries: 0 })
    }

    // -----------------------------------------------------------------------------------------
    // Tokens.

    fn peek(&mut self) -> Result<&Token> {
        let tok = match self.peeked.take() {
            Some(t) => t,
            None => self.lex.next_token()?,
        };
        Ok(self.peeked.insert(tok))
    }

    fn peek_is(&mut self, kind: &Tok) -> Result<bool> {
        Ok(self.peek()?.kind == *kind)
    }

    fn next(&mut self) -> Result<Token> {
        match self.peeked.take() {
            Some(t) => Ok(t),
            None => self.lex.next_token(),
        }
    }

    /// Consumes the next token if it is `kind`.
    fn eat(&mut self, kind: &Tok) -> Result<bool> {
        let hit = self.peek_is(kind)?;
        if hit {
            self.peeked = None;
        }
        Ok(hit)
    }

    fn eat_kw(&mut self, kw: Kw) -> Result<bool> {
        self.eat(&Tok::Keyword(kw))
    }

    fn expect_kw(&mut self, kw: Kw) -> Result<Token> {
        let t = self.next()?;
        if t.is_kw(kw) { Ok(t) } else { Err(self.unexpected(&t, &[kw.as_str()])) }
    }

    fn expect(&mut self, kind: Tok, name: &str) -> Result<Token> {
        let t = self.next()?;
        if t.kind == kind { Ok(t) } else { Err(self.unexpected(&t, &[name])) }
    }

    fn expect_end(&mut self) -> Result<()> {
        let t = self.next()?;
        if t.kind == Tok::Eof { Ok(()) } else { Err(self.unexpected(&t, &["EOF"])) }
    }

    fn unexpected(&self, t: &Token, expected: &[&str]) -> ParseError {
        let msg = format!("found {}, expected {}", t.describe(self.src), expected.join(", "));
        ParseError::new(self.src, t.start, msg)
    }

    fn error_at(&self, pos: usize, message: impl Into<String>) -> ParseError {
        ParseError::new(self.src, pos, message)
    }

    /// The offset where the next token starts.
    fn next_pos(&mut self) -> Result<usize> {
        Ok(self.peek()?.start)
    }

    /// A regex `/.../` if one comes next (read as a regex, not as a division).
    fn try_regex(&mut self) -> Result<Option<(String, usize)>> {
        if let Some(t) = self.peeked.take() {
            self.lex.rewind(t.start);
        }
        self.lex.scan_regex()
    }

    fn expect_regex(&mut self) -> Result<String> {
        match self.try_regex()? {
            Some((re, _)) => Ok(re),
            None => {
                let t = self.next()?;
                Err(self.unexpected(&t, &["regex"]))
            }
        }
    }

    fn parse_ident(&mut self) -> Result<String> {
        let t = self.next()?;
        match t.kind {
            Tok::Ident(s) => Ok(s),
            _ => Err(self.unexpected(&t, &["identifier"])),
        }
    }

    fn parse_ident_list(&mut self) -> Result<Vec<String>> {
        let mut idents = vec![self.parse_ident()?];
        while self.eat(&Tok::Comma)? {
            idents.push(self.parse_ident()?);
        }
        Ok(idents)
    }

    /// `[kw n]`: an optional keyword followed by an unsigned integer.
    fn parse_opt_uint(&mut self, kw: Kw) -> Result<Option<u64>> {
        if !self.eat_kw(kw)? {
            return Ok(None);
        }
        let t = self.next()?;
        if t.kind != Tok::Integer {
            return Err(self.unexpected(&t, &["integer"]));
        }
        match self.src[t.start..t.end].parse::<u64>() {
            Ok(n) => Ok(Some(n)),
            Err(_) => Err(self.error_at(t.start, "unable to parse integer")),
        }
    }

    fn enter(&mut self, pos: usize) -> Result<()> {
        self.nesting += 1;
        if self.nesting > EXPR_DEPTH_MAX {
            return Err(self.too_deep(pos));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.nesting -= 1;
    }

    fn too_deep(&self, pos: usize) -> ParseError {
        self.error_at(pos, format!("expression nested too deeply (more than {EXPR_DEPTH_MAX} levels)"))
    }

    fn check_depth(&self, depth: usize, pos: usize) -> Result<usize> {
        if depth > EXPR_DEPTH_MAX { Err(self.too_deep(pos)) } else { Ok(depth) }
    }

    // -----------------------------------------------------------------------------------------
    // Queries and statements.

    pub(crate) fn parse_query(mut self) -> Result<Vec<Statement>> {
        let mut statements = Vec::new();
        loop {
            while self.eat(&Tok::Semicolon)? {}
            if self.peek_is(&Tok::Eof)? {
                return Ok(statements);
            }
            statements.push(self.parse_statement()?);
            let t = self.peek()?;
            if !matches!(t.kind, Tok::Semicolon | Tok::Eof) {
                let t = t.clone();
                return Err(self.unexpected(&t, &[";"]));
            }
        }
    }

    pub(crate) fn parse_single_statement(mut self) -> Result<Statement> {
        let statement = self.parse_statement()?;
        self.eat(&Tok::Semicolon)?;
        self.expect_end()?;
        Ok(statement)
    }

    pub(crate) fn parse_single_expr(mut self) -> Result<Expr> {
        let expr = self.parse_expr()?;
        self.expect_end()?;
        Ok(expr)
    }

    fn parse_statement(&mut self) -> Result<Statement> {
        let t = self.next()?;
        match t.kind {
            Tok::Keyword(Kw::Select) => Ok(Statement::Select(Box::new(self.parse_select()?))),
            Tok::Keyword(Kw::Delete) => self.parse_delete(),
            Tok::Keyword(Kw::Show) => self.parse_show(),
            Tok::Keyword(Kw::Create) => self.parse_create(),
            Tok::Keyword(Kw::Alter) => self.parse_alter(),
            Tok::Keyword(Kw::Drop) => self.parse_drop(),
            Tok::Keyword(Kw::Explain) => self.parse_explain(),
            _ => Err(self.unexpected(&t, &["SELECT", "DELETE", "SHOW", "CREATE", "DROP", "EXPLAIN", "ALTER"])),
        }
    }

    /// After `SELECT`.
    fn parse_select(&mut self) -> Result<SelectStatement> {
        let fields = self.parse_fields()?;
        let into = if self.eat_kw(Kw::Into)? { Some(self.parse_target()?) } else { None };
        self.expect_kw(Kw::From)?;
        let mut from = vec![self.parse_source()?];
        while self.eat(&Tok::Comma)? {
            from.push(self.parse_source()?);
        }
        let condition = self.parse_condition()?;
        let dimensions = self.parse_dimensions()?;
        let fill = self.parse_fill()?;
        let order_desc = self.parse_order_by()?;
        let limit = self.parse_opt_uint(Kw::Limit)?;
        let offset = self.parse_opt_uint(Kw::Offset)?;
        let slimit = self.parse_opt_uint(Kw::Slimit)?;
        let soffset = self.parse_opt_uint(Kw::Soffset)?;
        let timezone = self.parse_tz()?;
        Ok(SelectStatement {
            fields,
            into,
            from,
            condition,
            dimensions,
            fill,
            order_desc,
            limit,
            offset,
            slimit,
            soffset,
            timezone,
        })
    }

    fn parse_fields(&mut self) -> Result<Vec<Field>> {
        let mut fields = Vec::new();
        loop {
            let expr = match self.try_regex()? {
                Some((re, _)) => Expr::RegexLit(re),
                None => {
                    let start = self.next_pos()?;
                    let expr = self.parse_expr()?;
                    let mut bad = None;
                    expr.walk(&mut |e| {
                        if let Expr::Binary { op, .. } = e
                            && (op.is_comparison() || op.is_logical())
                            && bad.is_none()
                        {
                            bad = Some(*op);
                        }
                    });
                    if let Some(op) = bad {
                        let msg =
                            format!("invalid operator {op} in SELECT clause; operator is intended for WHERE clause");
                        return Err(self.error_at(start, msg));
                    }
                    expr
                }
            };
            let alias = if self.eat_kw(Kw::As)? { Some(self.parse_ident()?) } else { None };
            fields.push(Field { expr, alias });
            if !self.eat(&Tok::Comma)? {
                return Ok(fields);
            }
        }
    }

    /// After `INTO`: `[[db.]rp.]measurement` or `[db.]rp.:MEASUREMENT`.
    fn parse_target(&mut self) -> Result<Target> {
        let start = self.next_pos()?;
        let mut segments = vec![self.parse_ident()?];
        let mut back_reference = false;
        while self.eat(&Tok::Dot)? {
            match self.peek()?.kind {
                Tok::Dot => segments.push(String::new()),
                Tok::Colon => {
                    self.next()?;
                    self.expect_kw(Kw::Measurement)?;
                    back_reference = true;
                    break;
                }
                _ => segments.push(self.parse_ident()?),
            }
            if segments.len() > 3 {
                break;
            }
        }
        if segments.len() + usize::from(back_reference) > 3 {
            return Err(self.error_at(start, "too many segments in INTO target"));
        }
        if back_reference {
            segments.push(String::new());
        }
        let mut it = segments.into_iter().rev();
        let measurement = it.next().filter(|_| !back_reference);
        let retention_policy = it.next().and_then(non_empty);
        let database = it.next().and_then(non_empty);
        Ok(Target { database, retention_policy, measurement })
    }

    /// One source of a `SELECT`'s `FROM`: a measurement, a regex, or `(SELECT ...)`.
    fn parse_source(&mut self) -> Result<Source> {
        if let Some((re, _)) = self.try_regex()? {
            return Ok(Source::Measurement(Measurement {
                database: None,
                retention_policy: None,
                name: MeasurementName::Regex(re),
            }));
        }
        if self.peek_is(&Tok::LParen)? {
            let open = self.next()?;
            self.expect_kw(Kw::Select)?;
            self.subqueries += 1;
            if self.subqueries > SUBQUERY_DEPTH_MAX {
                return Err(
                    self.error_at(open.start, format!("subqueries nested too deeply (more than {SUBQUERY_DEPTH_MAX})"))
                );
            }
            let select = self.parse_select()?;
            self.subqueries -= 1;
            self.expect(Tok::RParen, ")")?;
            return Ok(Source::Subquery(Box::new(select)));
        }
        Ok(Source::Measurement(self.parse_measurement()?.1))
    }

    /// `name`, `rp.name`, `db.rp.name`, `db..name`, `/re/`, `rp./re/`, `db.rp./re/`, `db../re/`; with
    /// the offset where it starts.
    fn parse_measurement(&mut self) -> Result<(usize, Measurement)> {
        if let Some((re, start)) = self.try_regex()? {
            let m = Measurement { database: None, retention_policy: None, name: MeasurementName::Regex(re) };
            return Ok((start, m));
        }
        let start = self.next_pos()?;
        let mut segments = vec![self.parse_ident()?];
        let mut regex = None;
        while self.eat(&Tok::Dot)? {
            if segments.len() <= 2
                && let Some((re, _)) = self.try_regex()?
            {
                regex = Some(re);
                break;
            }
            if self.peek_is(&Tok::Dot)? {
                segments.push(String::new());
            } else {
                segments.push(self.parse_ident()?);
            }
            if segments.len() > 3 {
                let shown: Vec<String> = segments.iter().map(|s| super::ast::quote_ident(s).into_owned()).collect();
                return Err(self.error_at(start, format!("too many segments in {}", shown.join("."))));
            }
        }
        let mut it = segments.into_iter().rev();
        let name = match regex {
            Some(re) => MeasurementName::Regex(re),
            None => MeasurementName::Name(it.next().unwrap_or_default()),
        };
        let retention_policy = it.next().and_then(non_empty);
        let database = it.next().and_then(non_empty);
        Ok((start, Measurement { database, retention_policy, name }))
    }

    /// A comma-separated list of measurements (the `FROM` of `SHOW`, `DROP SERIES`, `DELETE`).
    fn parse_measurements(&mut self) -> Result<Vec<(usize, Measurement)>> {
        let mut list = vec![self.parse_measurement()?];
        while self.eat(&Tok::Comma)? {
            list.push(self.parse_measurement()?);
        }
        Ok(list)
    }

    fn parse_opt_from(&mut self) -> Result<Vec<Measurement>> {
        if !self.eat_kw(Kw::From)? {
            return Ok(Vec::new());
        }
        Ok(self.parse_measurements()?.into_iter().map(|(_, m)| m).collect())
    }

    fn parse_condition(&mut self) -> Result<Option<Expr>> {
        if self.eat_kw(Kw::Where)? { Ok(Some(self.parse_expr()?)) } else { Ok(None) }
    }

    fn parse_on(&mut self) -> Result<Option<String>> {
        if self.eat_kw(Kw::On)? { Ok(Some(self.parse_ident()?)) } else { Ok(None) }
    }

    /// `[GROUP BY dimension, ...]`
    fn parse_dimensions(&mut self) -> Result<Vec<Dimension>> {
        if !self.eat_kw(Kw::Group)? {
            return Ok(Vec::new());
        }
        self.expect_kw(Kw::By)?;
        let mut dimensions = Vec::new();
        loop {
            let dimension = match self.try_regex()? {
                Some((re, _)) => Dimension::Regex(re),
                None => {
                    let start = self.next_pos()?;
                    let expr = self.parse_expr()?;
                    let dimension = self.dimension(expr, start)?;
                    if matches!(dimension, Dimension::Time { .. })
                        && dimensions.iter().any(|d| matches!(d, Dimension::Time { .. }))
                    {
                        return Err(self.error_at(start, "multiple time dimensions"));
                    }
                    dimension
                }
            };
            dimensions.push(dimension);
            if !self.eat(&Tok::Comma)? {
                return Ok(dimensions);
            }
        }
    }

    fn dimension(&self, expr: Expr, start: usize) -> Result<Dimension> {
        match expr {
            Expr::Call { name, args } if name == "time" => {
                if args.is_empty() || args.len() > 2 {
                    return Err(self.error_at(start, "time dimension expected 1 or 2 arguments"));
                }
                let interval = match args[0] {
                    Expr::DurationLit(d) if d > 0 => d,
                    Expr::DurationLit(_) => {
                        return Err(self.error_at(start, "time dimension must have a positive duration"));
                    }
                    _ => return Err(self.error_at(start, "time dimension must have duration argument")),
                };
                let offset = match args.get(1) {
                    None => None,
                    Some(Expr::DurationLit(d)) => Some(TimeOffset::Duration(*d)),
                    Some(Expr::Now) => Some(TimeOffset::Now),
                    Some(_) => return Err(self.error_at(start, "time dimension offset must be duration or now()")),
                };
                Ok(Dimension::Time { interval_ns: interval, offset })
            }
            Expr::Call { .. } | Expr::Now => Err(self.error_at(start, "only time() calls allowed in dimensions")),
            Expr::VarRef { name, .. } if name.eq_ignore_ascii_case("time") => {
                Err(self.error_at(start, "time() is a function and expects at least one argument"))
            }
            Expr::VarRef { name, .. } => Ok(Dimension::Tag(name)),
            Expr::Wildcard(_) => Ok(Dimension::Wildcard),
            _ => Err(self.error_at(start, "only time and tag dimensions allowed")),
        }
    }

    /// `[fill(null | none | previous | linear | number)]`
    fn parse_fill(&mut self) -> Result<Option<Fill>> {
        let t = self.peek()?;
        if !matches!(&t.kind, Tok::Ident(s) if s.eq_ignore_ascii_case("fill")) {
            return Ok(None);
        }
        let start = t.start;
        self.next()?;
        self.expect(Tok::LParen, "(")?;
        self.enter(start)?;
        let (args, _) = self.parse_call_args()?;
        self.leave();
        let [arg] = &args[..] else {
            return Err(self.error_at(start, "fill requires an argument, e.g.: 0, null, none, previous, linear"));
        };
        let fill = match arg {
            Expr::VarRef { name, data_type: None } if name.eq_ignore_ascii_case("null") => Fill::Null,
            Expr::VarRef { name, data_type: None } if name.eq_ignore_ascii_case("none") => Fill::None,
            Expr::VarRef { name, data_type: None } if name.eq_ignore_ascii_case("previous") => Fill::Previous,
            Expr::VarRef { name, data_type: None } if name.eq_ignore_ascii_case("linear") => Fill::Linear,
            Expr::IntegerLit(n) => Fill::Integer(*n),
            Expr::NumberLit(x) => Fill::Float(*x),
            _ => return Err(self.error_at(start, "expected number argument in fill()")),
        };
        Ok(Some(fill))
    }

    /// `[ORDER BY time [ASC|DESC]]` or `[ORDER BY ASC|DESC]`: true if descending.
    fn parse_order_by(&mut self) -> Result<bool> {
        if !self.eat_kw(Kw::Order)? {
            return Ok(false);
        }
        self.expect_kw(Kw::By)?;
        let t = self.next()?;
        let desc = match &t.kind {
            Tok::Keyword(Kw::Asc) => false,
            Tok::Keyword(Kw::Desc) => true,
            Tok::Ident(name) => {
                if name != "time" {
                    return Err(self.error_at(t.start, "only ORDER BY time supported at this time"));
                }
                self.parse_asc_desc()?
            }
            _ => return Err(self.unexpected(&t, &["identifier", "ASC", "DESC"])),
        };
        if self.eat(&Tok::Comma)? {
            let start = self.next_pos()?;
            self.parse_ident()?;
            self.parse_asc_desc()?;
            return Err(self.error_at(start, "only ORDER BY time supported at this time"));
        }
        Ok(desc)
    }

    fn parse_asc_desc(&mut self) -> Result<bool> {
        if self.eat_kw(Kw::Desc)? {
            return Ok(true);
        }
        self.eat_kw(Kw::Asc)?;
        Ok(false)
    }

    /// `[tz('Zone/Name')]`
    fn parse_tz(&mut self) -> Result<Option<String>> {
        let t = self.peek()?;
        if !matches!(&t.kind, Tok::Ident(s) if s.eq_ignore_ascii_case("tz")) {
            return Ok(None);
        }
        let start = t.start;
        self.next()?;
        self.expect(Tok::LParen, "(")?;
        self.enter(start)?;
        let (args, _) = self.parse_call_args()?;
        self.leave();
        match <[Expr; 1]>::try_from(args) {
            Ok([Expr::StringLit(zone)]) => Ok(Some(zone)),
            Ok(_) => Err(self.error_at(start, "expected string argument in tz()")),
            Err(_) => Err(self.error_at(start, "tz requires exactly one argument")),
        }
    }

    /// After `EXPLAIN`.
    fn parse_explain(&mut self) -> Result<Statement> {
        let analyze = self.eat_kw(Kw::Analyze)?;
        let verbose = self.eat_kw(Kw::Verbose)?;
        self.expect_kw(Kw::Select)?;
        let statement = Box::new(self.parse_select()?);
        Ok(Statement::Explain(ExplainStatement { analyze, verbose, statement }))
    }

    /// After `DELETE`.
    fn parse_delete(&mut self) -> Result<Statement> {
        let first = self.peek()?.clone();
        let mut from = Vec::new();
        if self.eat_kw(Kw::From)? {
            for (pos, m) in self.parse_measurements()? {
                if m.database.is_some() {
                    return Err(self.error_at(pos, "database not supported"));
                }
                from.push(m);
            }
        }
        let condition = self.parse_condition()?;
        if from.is_empty() && condition.is_none() {
            return Err(self.unexpected(&first, &["FROM", "WHERE"]));
        }
        Ok(Statement::Delete(DeleteStatement { from, condition }))
    }

    /// After `CREATE`.
    fn parse_create(&mut self) -> Result<Statement> {
        let t = self.next()?;
        if t.is_kw(Kw::Retention) {
            return self.parse_create_retention_policy();
        }
        if !t.is_kw(Kw::Database) {
            return Err(self.unexpected(&t, &["DATABASE", "RETENTION"]));
        }
        let name = self.parse_ident()?;
        let mut retention_policy = None;
        if self.eat_kw(Kw::With)? {
            let t = self.peek()?;
            if ![Kw::Duration, Kw::Replication, Kw::Shard, Kw::Name].iter().any(|&kw| t.is_kw(kw)) {
                let t = t.clone();
                return Err(self.unexpected(&t, &["DURATION", "NAME", "REPLICATION", "SHARD"]));
            }
            let mut spec = RetentionPolicySpec::default();
            if self.eat_kw(Kw::Duration)? {
                spec.duration_ns = Some(self.parse_rp_duration()?);
            }
            if self.eat_kw(Kw::Replication)? {
                spec.replication = Some(self.parse_replication()?);
            }
            if self.eat_kw(Kw::Shard)? {
                self.expect_kw(Kw::Duration)?;
                spec.shard_duration_ns = Some(self.parse_rp_duration()?);
            }
            if self.eat_kw(Kw::Name)? {
                spec.name = Some(self.parse_ident()?);
            }
            retention_policy = Some(spec);
        }
        Ok(Statement::CreateDatabase(CreateDatabaseStatement { name, retention_policy }))
    }

    /// After `CREATE RETENTION`: `POLICY name ON db DURATION d REPLICATION n [SHARD DURATION d]
    /// [DEFAULT]`, in this order (as InfluxDB's parser wants it).
    fn parse_create_retention_policy(&mut self) -> Result<Statement> {
        let (name, database) = self.parse_rp_name_on()?;
        let mut rp = RetentionPolicyStatement { name, database, ..Default::default() };
        self.expect_kw(Kw::Duration)?;
        rp.duration_ns = Some(self.parse_rp_duration()?);
        self.expect_kw(Kw::Replication)?;
        rp.replication = Some(self.parse_replication()?);
        if self.eat_kw(Kw::Shard)? {
            self.expect_kw(Kw::Duration)?;
            rp.shard_duration_ns = Some(self.parse_rp_duration()?);
        }
        rp.default = self.eat_kw(Kw::Default)?;
        Ok(Statement::CreateRetentionPolicy(rp))
    }

    /// After `ALTER`: `RETENTION POLICY name ON db` and at least one of `DURATION d`, `REPLICATION n`,
    /// `SHARD DURATION d`, `DEFAULT`, in any order, each at most once (InfluxDB's grammar).
    fn parse_alter(&mut self) -> Result<Statement> {
        self.expect_kw(Kw::Retention)?;
        let (name, database) = self.parse_rp_name_on()?;
        let mut rp = RetentionPolicyStatement { name, database, ..Default::default() };
        const OPTIONS: &[&str] = &["DURATION", "REPLICATION", "SHARD", "DEFAULT"];
        let mut seen = 0;
        loop {
            let t = self.peek()?.clone();
            let repeated = match t.kind {
                Tok::Keyword(Kw::Duration) => rp.duration_ns.is_some(),
                Tok::Keyword(Kw::Replication) => rp.replication.is_some(),
                Tok::Keyword(Kw::Shard) => rp.shard_duration_ns.is_some(),
                Tok::Keyword(Kw::Default) => rp.default,
                _ if seen == 0 => return Err(self.unexpected(&t, OPTIONS)),
                _ => return Ok(Statement::AlterRetentionPolicy(rp)),
            };
            if repeated {
                return Err(self.error_at(t.start, format!("found duplicate {}", t.describe(self.src))));
            }
            self.next()?;
            match t.kind {
                Tok::Keyword(Kw::Duration) => rp.duration_ns = Some(self.parse_rp_duration()?),
                Tok::Keyword(Kw::Replication) => rp.replication = Some(self.parse_replication()?),
                Tok::Keyword(Kw::Shard) => {
                    self.expect_kw(Kw::Duration)?;
                    rp.shard_duration_ns = Some(self.parse_rp_duration()?);
                }
                _ => rp.default = true,
            }
            seen += 1;
        }
    }

    /// `POLICY name ON db`, after `RETENTION`.
    fn parse_rp_name_on(&mut self) -> Result<(String, String)> {
        self.expect_kw(Kw::Policy)?;
        let name = self.parse_ident()?;
        self.expect_kw(Kw::On)?;
        Ok((name, self.parse_ident()?))
    }

    /// A replication factor: an integer from 1 to `i32::MAX`.
    fn parse_replication(&mut self) -> Result<u32> {
        let t = self.next()?;
        if t.kind != Tok::Integer {
            return Err(self.unexpected(&t, &["integer"]));
        }
        let text = &self.src[t.start..t.end];
        match text.parse::<u32>() {
            Ok(n) if (1..=i32::MAX as u32).contains(&n) => Ok(n),
            _ => Err(self.error_at(t.start, format!("invalid value {text}: must be 1 <= n <= {}", i32::MAX))),
        }
    }

    /// A retention policy duration: a duration literal, or `INF` (0).
    fn parse_rp_duration(&mut self) -> Result<i64> {
        let t = self.next()?;
        match t.kind {
            Tok::Keyword(Kw::Inf) => Ok(0),
            Tok::Duration => {
                let text = &self.src[t.start..t.end];
                parse_duration(text).ok_or_else(|| self.error_at(t.start, format!("invalid duration {text}")))
            }
            _ => Err(self.unexpected(&t, &["duration"])),
        }
    }

    /// After `DROP`.
    fn parse_drop(&mut self) -> Result<Statement> {
        let t = self.next()?;
        match t.kind {
            Tok::Keyword(Kw::Database) => Ok(Statement::DropDatabase { name: self.parse_ident()? }),
            Tok::Keyword(Kw::Measurement) => Ok(Statement::DropMeasurement { name: self.parse_ident()? }),
            Tok::Keyword(Kw::Series) => {
                let first = self.peek()?.clone();
                let mut from = Vec::new();
                if self.eat_kw(Kw::From)? {
                    for (pos, m) in self.parse_measurements()? {
                        if m.database.is_some() {
                            return Err(self.error_at(pos, "database not supported"));
                        }
                        if m.retention_policy.is_some() {
                            return Err(self.error_at(pos, "retention policy not supported"));
                        }
                        from.push(m);
                    }
                }
                let condition = self.parse_condition()?;
                if from.is_empty() && condition.is_none() {
                    return Err(self.unexpected(&first, &["FROM", "WHERE"]));
                }
                Ok(Statement::DropSeries(DropSeriesStatement { from, condition }))
            }
            _ => Err(self.unexpected(&t, &["DATABASE", "MEASUREMENT", "SERIES"])),
        }
    }

    /// After `SHOW`.
    fn parse_show(&mut self) -> Result<Statement> {
        let t = self.next()?;
        match t.kind {
            Tok::Keyword(Kw::Databases) => Ok(Statement::ShowDatabases),
            Tok::Keyword(Kw::Field) => {
                let t = self.next()?;
                match t.kind {
                    Tok::Keyword(Kw::Keys) => self.parse_show_field_keys(),
                    Tok::Keyword(Kw::Key) => self.parse_show_cardinality(CardinalityKind::FieldKey),
                    _ => Err(self.unexpected(&t, &["KEY", "KEYS"])),
                }
            }
            Tok::Keyword(Kw::Measurement) => self.parse_show_cardinality(CardinalityKind::Measurement),
            Tok::Keyword(Kw::Measurements) => self.parse_show_measurements(),
            Tok::Keyword(Kw::Retention) => {
                self.expect_kw(Kw::Policies)?;
                Ok(Statement::ShowRetentionPolicies { database: self.parse_on()? })
            }
            Tok::Keyword(Kw::Series) if self.cardinality_follows()? => {
                self.parse_show_cardinality(CardinalityKind::Series)
            }
            Tok::Keyword(Kw::Series) => self.parse_show_series(),
            Tok::Keyword(Kw::Tag) => {
                let t = self.next()?;
                match t.kind {
                    Tok::Keyword(Kw::Keys) => self.parse_show_tag_keys(),
                    Tok::Keyword(Kw::Key) => self.parse_show_cardinality(CardinalityKind::TagKey),
                    Tok::Keyword(Kw::Values) if self.cardinality_follows()? => {
                        self.parse_show_cardinality(CardinalityKind::TagValues)
                    }
                    Tok::Keyword(Kw::Values) => self.parse_show_tag_values(),
                    _ => Err(self.unexpected(&t, &["KEY", "KEYS", "VALUES"])),
                }
            }
            _ => Err(self
                .unexpected(&t, &["DATABASES", "FIELD", "MEASUREMENT", "MEASUREMENTS", "RETENTION", "SERIES", "TAG"])),
        }
    }

    /// True if `EXACT` or `CARDINALITY` comes next.
    fn cardinality_follows(&mut self) -> Result<bool> {
        let t = self.peek()?;
        Ok(t.is_kw(Kw::Exact) || t.is_kw(Kw::Cardinality))
    }

    /// After `SHOW FIELD KEYS`.
    fn parse_show_field_keys(&mut self) -> Result<Statement> {
        let database = self.parse_on()?;
        let from = self.parse_opt_from()?;
        self.parse_order_by()?;
        let limit = self.parse_opt_uint(Kw::Limit)?;
        let offset = self.parse_opt_uint(Kw::Offset)?;
        Ok(Statement::ShowFieldKeys(ShowFieldKeysStatement { database, from, limit, offset }))
    }

    /// After `SHOW SERIES`.
    fn parse_show_series(&mut self) -> Result<Statement> {
        let database = self.parse_on()?;
        let from = self.parse_opt_from()?;
        let condition = self.parse_condition()?;
        self.parse_order_by()?;
        let limit = self.parse_opt_uint(Kw::Limit)?;
        let offset = self.parse_opt_uint(Kw::Offset)?;
        Ok(Statement::ShowSeries(ShowSeriesStatement { database, from, condition, limit, offset }))
    }

    /// After `SHOW TAG VALUES`.
    fn parse_show_tag_values(&mut self) -> Result<Statement> {
        let database = self.parse_on()?;
        let from = self.parse_opt_from()?;
        let with_key = self.parse_with_key()?;
        let condition = self.parse_condition()?;
        self.parse_order_by()?;
        let limit = self.parse_opt_uint(Kw::Limit)?;
        let offset = self.parse_opt_uint(Kw::Offset)?;
        Ok(Statement::ShowTagValues(ShowTagValuesStatement { database, from, with_key, condition, limit, offset }))
    }

    /// After `SHOW MEASUREMENTS`.
    fn parse_show_measurements(&mut self) -> Result<Statement> {
        let database = self.parse_on()?;
        let mut with_measurement = None;
        if self.eat_kw(Kw::With)? {
            self.expect_kw(Kw::Measurement)?;
            let t = self.next()?;
            if !matches!(t.kind, Tok::Eq | Tok::EqRegex) {
                return Err(self.unexpected(&t, &["=", "=~"]));
            }
            with_measurement = Some(self.parse_measurement()?.1);
        }
        let condition = self.parse_condition()?;
        self.parse_order_by()?;
        let limit = self.parse_opt_uint(Kw::Limit)?;
        let offset = self.parse_opt_uint(Kw::Offset)?;
        Ok(Statement::ShowMeasurements(ShowMeasurementsStatement {
            database,
            with_measurement,
            condition,
            limit,
            offset,
        }))
    }

    /// After `SHOW TAG KEYS`.
    fn parse_show_tag_keys(&mut self) -> Result<Statement> {
        let database = self.parse_on()?;
        let from = self.parse_opt_from()?;
        let with_key = if self.peek()?.is_kw(Kw::With) { Some(self.parse_with_key()?) } else { None };
        let condition = self.parse_condition()?;
        self.parse_order_by()?;
        let limit = self.parse_opt_uint(Kw::Limit)?;
        let offset = self.parse_opt_uint(Kw::Offset)?;
        let slimit = self.parse_opt_uint(Kw::Slimit)?;
        let soffset = self.parse_opt_uint(Kw::Soffset)?;
        Ok(Statement::ShowTagKeys(ShowTagKeysStatement {
            database,
            from,
            with_key,
            condition,
            limit,
            offset,
            slimit,
            soffset,
        }))
    }

    /// `WITH KEY (= k | != k | IN (k, ...) | =~ /re/ | !~ /re/)`
    fn parse_with_key(&mut self) -> Result<TagKeyFilter> {
        self.expect_kw(Kw::With)?;
        self.expect_kw(Kw::Key)?;
        let t = self.next()?;
        match t.kind {
            Tok::Keyword(Kw::In) => {
                self.expect(Tok::LParen, "(")?;
                let keys = self.parse_ident_list()?;
                self.expect(Tok::RParen, ")")?;
                Ok(TagKeyFilter::In(keys))
            }
            Tok::Eq => Ok(TagKeyFilter::Eq(self.parse_ident()?)),
            Tok::Neq => Ok(TagKeyFilter::NotEq(self.parse_ident()?)),
            Tok::EqRegex => Ok(TagKeyFilter::Regex(self.expect_regex()?)),
            Tok::NeqRegex => Ok(TagKeyFilter::NotRegex(self.expect_regex()?)),
            _ => Err(self.unexpected(&t, &["IN", "=", "!=", "=~", "!~"])),
        }
    }

    /// After `SHOW SERIES`, `SHOW MEASUREMENT`, `SHOW TAG KEY`, `SHOW TAG VALUES` or `SHOW FIELD KEY`,
    /// when `[EXACT] CARDINALITY` follows.
    fn parse_show_cardinality(&mut self, kind: CardinalityKind) -> Result<Statement> {
        let exact = self.eat_kw(Kw::Exact)?;
        let t = self.next()?;
        if !t.is_kw(Kw::Cardinality) {
            let expected: &[&str] = if exact { &["CARDINALITY"] } else { &["EXACT", "CARDINALITY"] };
            return Err(self.unexpected(&t, expected));
        }
        let database = self.parse_on()?;
        let from = self.parse_opt_from()?;
        let with_key = if kind == CardinalityKind::TagValues { Some(self.parse_with_key()?) } else { None };
        let condition = self.parse_condition()?;
        let dimensions = self.parse_dimensions()?;
        let limit = self.parse_opt_uint(Kw::Limit)?;
        let offset = self.parse_opt_uint(Kw::Offset)?;
        Ok(Statement::ShowCardinality(ShowCardinalityStatement {
            kind,
            exact,
            database,
            from,
            with_key,
            condition,
            dimensions,
            limit,
            offset,
        }))
    }

    // -----------------------------------------------------------------------------------------
    // Expressions.
    //
    // Parentheses, calls and unary minus recurse. Unoptimized builds give each function a stack frame
    // as large as all its temporaries together, so the functions on the recursive path
    // (`parse_binary`, `parse_operand`, `parse_paren`, `parse_sign`, `parse_call_args`) stay small,
    // and everything else (literals, errors) lives in functions called from them, never around the
    // recursion. The deepest expressions allowed then need under 1 MiB of stack unoptimized (test
    // `deepest_inputs_fit_a_small_stack` runs them on 2 MiB).

    pub(crate) fn parse_expr(&mut self) -> Result<Expr> {
        Ok(self.parse_binary(1)?.0)
    }

    /// Operators of precedence `min_prec` and above, associating to the left.
    fn parse_binary(&mut self, min_prec: u8) -> Result<Parsed> {
        // Explicit matches rather than `?`: unoptimized, each `?` costs stack on this recursive path.
        let mut lhs = match self.parse_operand() {
            Ok(lhs) => lhs,
            err => return err,
        };
        loop {
            let (op, op_pos) = match self.next_binary_op(min_prec) {
                Ok(Some(op)) => op,
                Ok(None) => return Ok(lhs),
                Err(e) => return Err(e),
            };
            let rhs = if op.is_regex() { self.parse_regex_operand() } else { self.parse_binary(op.precedence() + 1) };
            lhs = match rhs {
                Ok(rhs) => match self.combine(op, op_pos, lhs, rhs) {
                    Ok(e) => e,
                    err => return err,
                },
                err => return err,
            };
        }
    }

    /// Consumes the next token if it is a binary operator of precedence `min_prec` or above.
    #[inline(never)]
    fn next_binary_op(&mut self, min_prec: u8) -> Result<Option<(BinaryOp, usize)>> {
        let t = self.peek()?;
        match binary_op(&t.kind) {
            Some(op) if op.precedence() >= min_prec => {
                let pos = t.start;
                self.peeked = None;
                Ok(Some((op, pos)))
            }
            _ => Ok(None),
        }
    }

    #[inline(never)]
    fn parse_regex_operand(&mut self) -> Result<Parsed> {
        Ok((Expr::RegexLit(self.expect_regex()?), 1))
    }

    #[inline(never)]
    fn combine(
        &self,
        op: BinaryOp,
        op_pos: usize,
        (lhs, lhs_depth): Parsed,
        (rhs, rhs_depth): Parsed,
    ) -> Result<Parsed> {
        let depth = self.check_depth(1 + lhs_depth.max(rhs_depth), op_pos)?;
        Ok((Expr::Binary { op, lhs: Box::new(lhs), rhs: Box::new(rhs) }, depth))
    }

    /// An operand: a literal, reference, call, wildcard, parenthesized expression or unary minus.
    fn parse_operand(&mut self) -> Result<Parsed> {
        let t = self.next()?;
        match t.kind {
            Tok::LParen => self.parse_paren(t.start),
            Tok::Ident(name) => match self.eat_lparen() {
                Ok(true) => self.parse_call(name, t.start),
                Ok(false) => self.parse_var_ref(name, t.start),
                Err(e) => Err(e),
            },
            Tok::Keyword(Kw::Distinct) => self.parse_distinct(t.start),
            Tok::Add => self.parse_sign(t.start, false),
            Tok::Sub => self.parse_sign(t.start, true),
            _ => self.parse_leaf(t),
        }
    }

    /// `(` was read.
    fn parse_paren(&mut self, start: usize) -> Result<Parsed> {
        self.enter(start)?;
        let inner = self.parse_binary(1);
        self.close_paren(inner)
    }

    /// Ends a parenthesized operand: expects `)`.
    #[inline(never)]
    fn close_paren(&mut self, inner: Result<Parsed>) -> Result<Parsed> {
        let inner = inner?;
        self.expect(Tok::RParen, ")")?;
        self.leave();
        Ok(inner)
    }

    #[inline(never)]
    fn eat_lparen(&mut self) -> Result<bool> {
        self.eat(&Tok::LParen)
    }

    /// `DISTINCT` was read: `DISTINCT(x)` or `DISTINCT x`, both the call `distinct(x)`.
    fn parse_distinct(&mut self, start: usize) -> Result<Parsed> {
        match self.eat_lparen() {
            Ok(true) => self.parse_call("distinct".to_string(), start),
            Ok(false) => self.parse_distinct_ident(start),
            Err(e) => Err(e),
        }
    }

    #[inline(never)]
    fn parse_distinct_ident(&mut self, start: usize) -> Result<Parsed> {
        let n = self.next()?;
        match n.kind {
            Tok::Ident(name) => Ok((
                Expr::Call { name: "distinct".to_string(), args: vec![Expr::var(name)] },
                self.check_depth(2, start)?,
            )),
            _ => Err(self.unexpected(&n, &["(", "identifier"])),
        }
    }

    /// A literal, wildcard or bound parameter (`t` was read).
    #[inline(never)]
    fn parse_leaf(&mut self, t: Token) -> Result<Parsed> {
        let leaf = |e: Expr| Ok((e, 1));
        match t.kind {
            Tok::Keyword(Kw::True) => leaf(Expr::BooleanLit(true)),
            Tok::Keyword(Kw::False) => leaf(Expr::BooleanLit(false)),
            Tok::Str(s) => leaf(Expr::StringLit(s)),
            Tok::BoundParam(name) => leaf(Expr::BoundParam(name)),
            Tok::Integer => {
                let text = &self.src[t.start..t.end];
                if let Ok(n) = text.parse::<i64>() {
                    leaf(Expr::IntegerLit(n))
                } else if let Ok(n) = text.parse::<u64>() {
                    leaf(Expr::UnsignedLit(n))
                } else {
                    Err(self.error_at(t.start, "unable to parse integer"))
                }
            }
            Tok::Number => match self.src[t.start..t.end].parse::<f64>() {
                Ok(x) if x.is_finite() => leaf(Expr::NumberLit(x)),
                _ => Err(self.error_at(t.start, "unable to parse number")),
            },
            Tok::Duration => {
                let text = &self.src[t.start..t.end];
                match parse_duration(text) {
                    Some(d) => leaf(Expr::DurationLit(d)),
                    None => Err(self.error_at(t.start, format!("invalid duration {text}"))),
                }
            }
            Tok::Mul => {
                let mut kind = None;
                if self.eat(&Tok::DoubleColon)? {
                    let k = self.next()?;
                    kind = Some(match k.kind {
                        Tok::Keyword(Kw::Field) => WildcardType::Field,
                        Tok::Keyword(Kw::Tag) => WildcardType::Tag,
                        _ => return Err(self.unexpected(&k, &["field", "tag"])),
                    });
                }
                leaf(Expr::Wildcard(kind))
            }
            _ => Err(self.unexpected(&t, EXPECTED_EXPR)),
        }
    }

    /// Unary `+` or `-` (at `start`, already read): folds into numeric and duration literals.
    fn parse_sign(&mut self, start: usize, negative: bool) -> Result<Parsed> {
        self.check_sign_operand(start)?;
        let operand = self.parse_operand();
        self.apply_sign(start, negative, operand)
    }

    #[inline(never)]
    fn apply_sign(&mut self, start: usize, negative: bool, operand: Result<Parsed>) -> Result<Parsed> {
        let operand = operand?;
        self.leave();
        if negative { self.negate(start, operand) } else { Ok(operand) }
    }

    /// Checks what follows a unary sign, and counts the nesting.
    #[inline(never)]
    fn check_sign_operand(&mut self, start: usize) -> Result<()> {
        let n = self.peek()?;
        if matches!(n.kind, Tok::Number | Tok::Integer | Tok::Duration | Tok::LParen | Tok::Ident(_)) {
            return self.enter(start);
        }
        let n = n.clone();
        Err(self.unexpected(&n, &["identifier", "number", "duration", "("]))
    }

    #[inline(never)]
    fn negate(&self, start: usize, (operand, depth): Parsed) -> Result<Parsed> {
        let overflow = |what: String| Err(self.error_at(start, format!("constant -{what} overflows int64")));
        let negated = match operand {
            Expr::IntegerLit(n) => match n.checked_neg() {
                Some(n) => Expr::IntegerLit(n),
                None => return overflow(format!("({n})")),
            },
            Expr::UnsignedLit(n) if n == 1 << 63 => Expr::IntegerLit(i64::MIN),
            Expr::UnsignedLit(n) => return overflow(n.to_string()),
            Expr::NumberLit(x) => Expr::NumberLit(-x),
            Expr::DurationLit(d) => match d.checked_neg() {
                Some(d) => Expr::DurationLit(d),
                None => return overflow(format!("({d}ns)")),
            },
            other => return Ok((Expr::Neg(Box::new(other)), self.check_depth(depth + 1, start)?)),
        };
        Ok((negated, depth))
    }

    /// `name(` was read: a call (or `now()`).
    fn parse_call(&mut self, name: String, start: usize) -> Result<Parsed> {
        self.enter(start)?;
        let args = self.parse_call_args();
        self.make_call(name, start, args)
    }

    #[inline(never)]
    fn make_call(&mut self, name: String, start: usize, args: Result<(Vec<Expr>, usize)>) -> Result<Parsed> {
        let (args, depth) = args?;
        self.leave();
        let name = name.to_ascii_lowercase();
        if name == "now" && args.is_empty() {
            return Ok((Expr::Now, 1));
        }
        let depth = self.check_depth(depth + 1, start)?;
        Ok((Expr::Call { name, args }, depth))
    }

    /// `name(` was read: the arguments up to `)`, and their greatest depth. A regex is allowed as a
    /// whole argument.
    fn parse_call_args(&mut self) -> Result<(Vec<Expr>, usize)> {
        let mut args = Vec::new();
        let mut depth = 0;
        loop {
            let arg = match self.call_arg_start(args.is_empty()) {
                Ok(ArgStart::Regex(re)) => Ok(re),
                Ok(ArgStart::Expr) => self.parse_binary(1),
                Ok(ArgStart::End) => return Ok((args, depth)),
                Err(e) => return Err(e),
            };
            match self.call_arg_end(arg, &mut args, &mut depth) {
                Ok(true) => return Ok((args, depth)),
                Ok(false) => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// What starts an argument: a regex (read), `)` (read; only allowed `first`), or an expression.
    #[inline(never)]
    fn call_arg_start(&mut self, first: bool) -> Result<ArgStart> {
        if let Some((re, _)) = self.try_regex()? {
            return Ok(ArgStart::Regex((Expr::RegexLit(re), 1)));
        }
        if first && self.eat(&Tok::RParen)? {
            return Ok(ArgStart::End);
        }
        Ok(ArgStart::Expr)
    }

    /// After an argument (added to `args`): true at `)`, false at `,`.
    #[inline(never)]
    fn call_arg_end(&mut self, arg: Result<Parsed>, args: &mut Vec<Expr>, depth: &mut usize) -> Result<bool> {
        let (arg, d) = arg?;
        args.push(arg);
        *depth = (*depth).max(d);
        let t = self.next()?;
        match t.kind {
            Tok::Comma => Ok(false),
            Tok::RParen => Ok(true),
            _ => Err(self.unexpected(&t, &[")"])),
        }
    }

    /// An identifier was read: more `.segment`s (at most 3 in all), then an optional `::type`.
    #[inline(never)]
    fn parse_var_ref(&mut self, first: String, start: usize) -> Result<Parsed> {
        let mut name = first;
        let mut segments = 1;
        while self.eat(&Tok::Dot)? {
            name.push('.');
            if !self.peek_is(&Tok::Dot)? {
                name.push_str(&self.parse_ident()?);
            }
            segments += 1;
            if segments > 3 {
                return Err(self.error_at(start, format!("too many segments in {}", super::ast::quote_ident(&name))));
            }
        }
        let mut data_type = None;
        if self.eat(&Tok::DoubleColon)? {
            let t = self.next()?;
            let ty = match &t.kind {
                Tok::Keyword(Kw::Field) => Some(VarType::Field),
                Tok::Keyword(Kw::Tag) => Some(VarType::Tag),
                Tok::Ident(s) => match s.to_ascii_lowercase().as_str() {
                    "float" => Some(VarType::Float),
                    "integer" => Some(VarType::Integer),
                    "unsigned" => Some(VarType::Unsigned),
                    "string" => Some(VarType::String),
                    "boolean" => Some(VarType::Boolean),
                    _ => None,
                },
                _ => None,
            };
            match ty {
                Some(ty) => data_type = Some(ty),
                None => {
                    let expected = &["float", "integer", "unsigned", "string", "boolean", "field", "tag"];
                    return Err(self.unexpected(&t, expected));
                }
            }
        }
        Ok((Expr::VarRef { name, data_type }, 1))
    }
}
