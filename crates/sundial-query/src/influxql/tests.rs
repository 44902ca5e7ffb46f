//! Tests of the InfluxQL lexer, parser, printer and literal helpers.

use super::*;

// ---------------------------------------------------------------------------------------------
// Helpers.

fn stmt(q: &str) -> Statement {
    parse_statement(q).unwrap_or_else(|e| panic!("{q:?}: {e}"))
}

fn select(q: &str) -> SelectStatement {
    match stmt(q) {
        Statement::Select(s) => *s,
        other => panic!("{q:?} is not a SELECT: {other:?}"),
    }
}

fn expr(q: &str) -> Expr {
    parse_expr(q).unwrap_or_else(|e| panic!("{q:?}: {e}"))
}

fn err(q: &str) -> String {
    match parse_query(q) {
        Ok(s) => panic!("{q:?} parsed: {s:?}"),
        Err(e) => e.to_string(),
    }
}

fn var(name: &str) -> Expr {
    Expr::var(name)
}

fn string(s: &str) -> Expr {
    Expr::StringLit(s.to_string())
}

fn bin(lhs: Expr, op: BinaryOp, rhs: Expr) -> Expr {
    Expr::binary(lhs, op, rhs)
}

fn call(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Call { name: name.to_string(), args }
}

fn m(name: &str) -> Measurement {
    Measurement { database: None, retention_policy: None, name: MeasurementName::Name(name.to_string()) }
}

/// Parses, prints, parses again: the trees must be equal and the second printing identical.
/// Returns the canonical text.
fn roundtrip(q: &str) -> String {
    let first = parse_query(q).unwrap_or_else(|e| panic!("{q:?}: {e}"));
    let printed = format_query(&first);
    let second = parse_query(&printed).unwrap_or_else(|e| panic!("{q:?} printed as {printed:?}: {e}"));
    assert_eq!(first, second, "{q:?} printed as {printed:?}");
    assert_eq!(printed, format_query(&second));
    printed
}

/// Like [`roundtrip`] but accepts inputs that do not parse.
fn roundtrip_if_valid(q: &str) {
    if let Ok(first) = parse_query(q) {
        let printed = format_query(&first);
        let second = parse_query(&printed).unwrap_or_else(|e| panic!("{q:?} printed as {printed:?}: {e}"));
        assert_eq!(first, second, "{q:?} printed as {printed:?}");
    }
}

const T0: &str = "2016-01-01T05:25:39Z";
const T1: &str = "2016-01-01T06:25:39Z";

// ---------------------------------------------------------------------------------------------
// TSBS cpu-only queries (as tsbs_generate_queries writes them for InfluxDB).

fn hosts(n: usize) -> String {
    let clauses: Vec<String> = (1..=n).map(|i| format!("hostname = 'host_{i}'")).collect();
    format!("({})", clauses.join(" or "))
}

fn aggs(agg: &str, metrics: &[&str], sep: &str) -> String {
    metrics.iter().map(|m| format!("{agg}({m})")).collect::<Vec<_>>().join(sep)
}

const METRICS5: [&str; 5] = ["usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait"];
const METRICS10: [&str; 10] = [
    "usage_user",
    "usage_system",
    "usage_idle",
    "usage_nice",
    "usage_iowait",
    "usage_irq",
    "usage_softirq",
    "usage_steal",
    "usage_guest",
    "usage_guest_nice",
];

fn tsbs_queries() -> Vec<(&'static str, String)> {
    let group_by_time = |metrics: &[&str], n: usize| {
        format!(
            "SELECT {} from cpu where {} and time >= '{T0}' and time < '{T1}' group by time(1m)",
            aggs("max", metrics, ", "),
            hosts(n)
        )
    };
    let double = |metrics: &[&str]| {
        format!(
            "SELECT {} from cpu where time >= '2016-01-01T12:22:13Z' and time < '2016-01-02T00:22:13Z' group by time(1h),hostname",
            aggs("mean", metrics, ",")
        )
    };
    let max_all = |n: usize| {
        format!(
            "SELECT {} from cpu where {} and time >= '{T0}' and time < '2016-01-01T13:25:39Z' group by time(1m)",
            aggs("max", &METRICS10, ","),
            hosts(n)
        )
    };
    vec![
        ("single-groupby-1-1-1", group_by_time(&METRICS5[..1], 1)),
        ("single-groupby-1-1-12", group_by_time(&METRICS5[..1], 1).replace(T1, "2016-01-01T17:25:39Z")),
        ("single-groupby-1-8-1", group_by_time(&METRICS5[..1], 8)),
        ("single-groupby-5-1-1", group_by_time(&METRICS5, 1)),
        ("single-groupby-5-1-12", group_by_time(&METRICS5, 1).replace(T1, "2016-01-01T17:25:39Z")),
        ("single-groupby-5-8-1", group_by_time(&METRICS5, 8)),
        ("cpu-max-all-1", max_all(1)),
        ("cpu-max-all-8", max_all(8)),
        ("double-groupby-1", double(&METRICS5[..1])),
        ("double-groupby-5", double(&METRICS5)),
        ("double-groupby-all", double(&METRICS10)),
        (
            "high-cpu-all",
            "SELECT * from cpu where usage_user > 90.0  and time >= '2016-01-01T05:15:03Z' and time < '2016-01-01T17:15:03Z'"
                .to_string(),
        ),
        (
            "high-cpu-1",
            format!(
                "SELECT * from cpu where usage_user > 90.0 and {} and time >= '2016-01-01T05:15:03Z' and time < '2016-01-01T17:15:03Z'",
                hosts(1)
            ),
        ),
        ("lastpoint", "SELECT * from cpu group by \"hostname\" order by time desc limit 1".to_string()),
        (
            "groupby-orderby-limit",
            "SELECT max(usage_user) from cpu WHERE time < '2016-01-01T07:09:52Z' group by time(1m) limit 5".to_string(),
        ),
    ]
}

#[test]
fn tsbs_all_queries_parse_and_roundtrip() {
    let queries = tsbs_queries();
    assert_eq!(queries.len(), 15);
    for (name, q) in &queries {
        let s = select(q);
        assert_eq!(s.from, vec![Source::Measurement(m("cpu"))], "{name}");
        roundtrip(q);
    }
}

#[test]
fn tsbs_single_groupby_structure() {
    let s = select(&tsbs_queries()[0].1);
    assert_eq!(s.fields, vec![Field { expr: call("max", vec![var("usage_user")]), alias: None }]);
    let host = bin(var("hostname"), BinaryOp::Eq, string("host_1"));
    let lower = bin(var("time"), BinaryOp::GtEq, string(T0));
    let upper = bin(var("time"), BinaryOp::Lt, string(T1));
    let expected = bin(bin(host, BinaryOp::And, lower), BinaryOp::And, upper);
    assert_eq!(s.condition, Some(expected));
    assert_eq!(s.dimensions, vec![Dimension::Time { interval_ns: 60_000_000_000, offset: None }]);
    assert_eq!(s.group_by_time(), Some((60_000_000_000, None)));
    assert!(!s.is_raw_query());
    assert_eq!(s.fill, None);
    assert_eq!((s.limit, s.offset, s.order_desc), (None, None, false));
}

#[test]
fn tsbs_hosts_or_chain_is_inside_and() {
    let s = select(&tsbs_queries()[2].1);
    let Some(Expr::Binary { op: BinaryOp::And, lhs, .. }) = &s.condition else { panic!() };
    let Expr::Binary { op: BinaryOp::And, lhs: hosts, .. } = &**lhs else { panic!() };
    // Eight `hostname = ...` joined by OR, left-deep.
    let mut n = 1;
    let mut e = &**hosts;
    while let Expr::Binary { op: BinaryOp::Or, lhs, rhs } = e {
        assert!(matches!(&**rhs, Expr::Binary { op: BinaryOp::Eq, .. }));
        e = lhs;
        n += 1;
    }
    assert_eq!(n, 8);
}

#[test]
fn tsbs_double_groupby_and_lastpoint() {
    let s = select(&tsbs_queries()[9].1);
    assert_eq!(s.fields.len(), 5);
    assert_eq!(
        s.dimensions,
        vec![Dimension::Time { interval_ns: 3_600_000_000_000, offset: None }, Dimension::Tag("hostname".into())]
    );
    assert_eq!(s.group_by_tags().collect::<Vec<_>>(), ["hostname"]);

    let s = select("SELECT * from cpu group by \"hostname\" order by time desc limit 1");
    assert_eq!(s.fields, vec![Field { expr: Expr::Wildcard(None), alias: None }]);
    assert_eq!(s.dimensions, vec![Dimension::Tag("hostname".into())]);
    assert!(s.order_desc);
    assert_eq!(s.limit, Some(1));
    assert!(s.is_raw_query());

    let s = select("SELECT \"hostname\", \"usage_user\" from cpu group by \"hostname\" order by time desc limit 1");
    assert_eq!(s.fields.iter().map(|f| f.expr.clone()).collect::<Vec<_>>(), vec![var("hostname"), var("usage_user")]);

    let s = select(&tsbs_queries()[11].1);
    let Some(Expr::Binary { lhs, .. }) = &s.condition else { panic!() };
    let Expr::Binary { lhs, .. } = &**lhs else { panic!() };
    assert_eq!(**lhs, bin(var("usage_user"), BinaryOp::Gt, Expr::NumberLit(90.0)));

    let s = select(&tsbs_queries()[14].1);
    assert_eq!(s.limit, Some(5));
    assert_eq!(s.condition, Some(bin(var("time"), BinaryOp::Lt, string("2016-01-01T07:09:52Z"))));
}

// ---------------------------------------------------------------------------------------------
// Expressions.

#[test]
fn precedence_and_associativity() {
    let (a, b, c) = (var("a"), var("b"), var("c"));
    assert_eq!(expr("a + b * c"), bin(a.clone(), BinaryOp::Add, bin(b.clone(), BinaryOp::Mul, c.clone())));
    assert_eq!(expr("a * b + c"), bin(bin(a.clone(), BinaryOp::Mul, b.clone()), BinaryOp::Add, c.clone()));
    assert_eq!(expr("a - b - c"), bin(bin(a.clone(), BinaryOp::Sub, b.clone()), BinaryOp::Sub, c.clone()));
    assert_eq!(expr("a - (b - c)"), bin(a.clone(), BinaryOp::Sub, bin(b.clone(), BinaryOp::Sub, c.clone())));
    assert_eq!(expr("a / b % c"), bin(bin(a.clone(), BinaryOp::Div, b.clone()), BinaryOp::Mod, c.clone()));
    assert_eq!(expr("a OR b AND c"), bin(a.clone(), BinaryOp::Or, bin(b.clone(), BinaryOp::And, c.clone())));
    assert_eq!(expr("a AND b OR c"), bin(bin(a.clone(), BinaryOp::And, b.clone()), BinaryOp::Or, c.clone()));
    assert_eq!(expr("(a OR b) AND c"), bin(bin(a.clone(), BinaryOp::Or, b.clone()), BinaryOp::And, c.clone()));
    assert_eq!(expr("a | b & c"), bin(a.clone(), BinaryOp::BitOr, bin(b.clone(), BinaryOp::BitAnd, c.clone())));
    assert_eq!(expr("a ^ b"), bin(a.clone(), BinaryOp::BitXor, b.clone()));
    // Comparisons bind tighter than AND/OR, arithmetic tighter than comparisons.
    assert_eq!(
        expr("x = 1 OR y + 1 > 2 AND z != 'q'"),
        bin(
            bin(var("x"), BinaryOp::Eq, Expr::IntegerLit(1)),
            BinaryOp::Or,
            bin(
                bin(bin(var("y"), BinaryOp::Add, Expr::IntegerLit(1)), BinaryOp::Gt, Expr::IntegerLit(2)),
                BinaryOp::And,
                bin(var("z"), BinaryOp::NotEq, string("q"))
            )
        )
    );
    // Parentheses leave no node.
    assert_eq!(expr("((a))"), a);
    assert_eq!(expr("a <> b"), bin(var("a"), BinaryOp::NotEq, var("b")));
    for (q, op) in [
        ("a = b", BinaryOp::Eq),
        ("a != b", BinaryOp::NotEq),
        ("a < b", BinaryOp::Lt),
        ("a <= b", BinaryOp::LtEq),
        ("a > b", BinaryOp::Gt),
        ("a >= b", BinaryOp::GtEq),
    ] {
        assert_eq!(expr(q), bin(var("a"), op, var("b")), "{q}");
    }
}

#[test]
fn display_adds_only_needed_parentheses() {
    for (q, printed) in [
        ("a + b * c", "a + b * c"),
        ("(a + b) * c", "(a + b) * c"),
        ("a - (b - c)", "a - (b - c)"),
        ("(a - b) - c", "a - b - c"),
        ("((a)) + (((b)))", "a + b"),
        ("a OR b AND c", "a OR b AND c"),
        ("(a OR b) AND (c OR d)", "(a OR b) AND (c OR d)"),
        ("a <> b", "a != b"),
        ("-x", "-x"),
        ("-(a + b)", "-(a + b)"),
        ("2 * -x", "2 * -x"),
        ("a - -5", "a - -5"),
        ("a - - x", "a - -x"),
        ("-(-x)", "-(-x)"),
        ("now() - 1h", "now() - 1h"),
        // Found by fuzzing: `-distinct(z)` does not parse (DISTINCT is a keyword).
        ("-(DISTINCT z)", "-(distinct(z))"),
        ("-\"select\"(z)", "-\"select\"(z)"),
        ("x =~ /a\\/b/", "x =~ /a\\/b/"),
        ("(a =~ /x/) + 1", "(a =~ /x/) + 1"),
    ] {
        assert_eq!(expr(q).to_string(), printed, "{q}");
        assert_eq!(expr(printed), expr(q), "{q}");
    }
}

#[test]
fn unary_minus_folds_into_literals() {
    assert_eq!(expr("-5"), Expr::IntegerLit(-5));
    assert_eq!(expr("- 5"), Expr::IntegerLit(-5));
    assert_eq!(expr("-(5)"), Expr::IntegerLit(-5));
    assert_eq!(expr("+5"), Expr::IntegerLit(5));
    assert_eq!(expr("-1.5"), Expr::NumberLit(-1.5));
    assert_eq!(expr("-1h"), Expr::DurationLit(-3_600_000_000_000));
    assert_eq!(expr("-x"), Expr::Neg(Box::new(var("x"))));
    assert_eq!(expr("+x"), var("x"));
    assert_eq!(expr("-mean(x)"), Expr::Neg(Box::new(call("mean", vec![var("x")]))));
    assert_eq!(expr("-9223372036854775808"), Expr::IntegerLit(i64::MIN));
    assert_eq!(expr("9223372036854775807"), Expr::IntegerLit(i64::MAX));
    assert_eq!(expr("9223372036854775808"), Expr::UnsignedLit(1 << 63));
    assert_eq!(expr("18446744073709551615"), Expr::UnsignedLit(u64::MAX));
    assert_eq!(
        parse_expr("-9223372036854775809").unwrap_err().message,
        "constant -9223372036854775809 overflows int64"
    );
    assert_eq!(parse_expr("18446744073709551616").unwrap_err().message, "unable to parse integer");
    assert_eq!(
        parse_expr("-'a'").unwrap_err().to_string(),
        "found a, expected identifier, number, duration, ( at line 1, char 2"
    );
    assert_eq!(
        parse_expr("-+1").unwrap_err().to_string(),
        "found +, expected identifier, number, duration, ( at line 1, char 2"
    );
    assert_eq!(expr("a-1"), bin(var("a"), BinaryOp::Sub, Expr::IntegerLit(1)));
    assert_eq!(expr("1 - -1"), bin(Expr::IntegerLit(1), BinaryOp::Sub, Expr::IntegerLit(-1)));
}

#[test]
fn literals() {
    assert_eq!(expr("'it\\'s a \\\\ \\n \"q\" \\\"'"), string("it's a \\ \n \"q\" \""));
    assert_eq!(expr("''"), string(""));
    assert_eq!(expr("'µs ünïcödé'"), string("µs ünïcödé"));
    assert_eq!(expr("true"), Expr::BooleanLit(true));
    assert_eq!(expr("FALSE"), Expr::BooleanLit(false));
    assert_eq!(expr("1.5"), Expr::NumberLit(1.5));
    assert_eq!(expr(".5"), Expr::NumberLit(0.5));
    assert_eq!(expr("1."), Expr::NumberLit(1.0));
    assert_eq!(expr("90.0"), Expr::NumberLit(90.0));
    assert_eq!(expr("007"), Expr::IntegerLit(7));
    assert_eq!(expr("10s"), Expr::DurationLit(10_000_000_000));
    assert_eq!(expr("1h30m"), Expr::DurationLit(5_400_000_000_000));
    assert_eq!(expr("5µ"), Expr::DurationLit(5_000));
    assert_eq!(expr("$host"), Expr::BoundParam("host".into()));
    assert_eq!(expr("$\"my param\""), Expr::BoundParam("my param".into()));
    assert_eq!(expr("now()"), Expr::Now);
    assert_eq!(expr("NOW()"), Expr::Now);
    // Printing keeps numbers numbers, floats floats.
    assert_eq!(expr("90.0").to_string(), "90.0");
    assert_eq!(expr(".5").to_string(), "0.5");
    assert_eq!(expr("100000000000000000000000.0").to_string(), "100000000000000000000000.0");
    assert_eq!(expr("0.000000000000001").to_string(), "0.000000000000001");
    assert_eq!(expr("'a\\'b\\nc'").to_string(), "'a\\'b\\nc'");
    assert_eq!(expr("5400s").to_string(), "90m");
    assert_eq!(expr("$select").to_string(), "$\"select\"");
    // Errors.
    assert_eq!(err("SELECT 'abc FROM m"), "unterminated string at line 1, char 8");
    assert_eq!(err("SELECT 'a\nb' FROM m"), "unterminated string at line 1, char 8");
    assert_eq!(err("SELECT 'a\\qb' FROM m"), "bad escape: \\q at line 1, char 10");
    assert_eq!(err("SELECT 10x FROM m"), "invalid duration 10x at line 1, char 8");
    assert_eq!(err("SELECT 1e3 FROM m"), "invalid duration 1e3 at line 1, char 8");
    assert_eq!(err("SELECT 10.5h FROM myseries"), "found h, expected FROM at line 1, char 12");
    assert_eq!(err("SELECT $ FROM m"), "empty bound parameter at line 1, char 8");
    let huge = format!("SELECT 1{}.0 FROM m", "0".repeat(400));
    assert_eq!(err(&huge), "unable to parse number at line 1, char 8");
}

#[test]
fn calls_and_distinct() {
    assert_eq!(expr("count(distinct(x))"), call("count", vec![call("distinct", vec![var("x")])]));
    assert_eq!(expr("count(DISTINCT x)"), call("count", vec![call("distinct", vec![var("x")])]));
    assert_eq!(expr("DISTINCT x"), call("distinct", vec![var("x")]));
    assert_eq!(expr("DISTINCT(\"x y\")"), call("distinct", vec![var("x y")]));
    assert_eq!(expr("max(*)"), call("max", vec![Expr::Wildcard(None)]));
    assert_eq!(expr("MEAN(x)"), call("mean", vec![var("x")]));
    assert_eq!(expr("percentile(x, 95)"), call("percentile", vec![var("x"), Expr::IntegerLit(95)]));
    assert_eq!(expr("top(x, host, 3)"), call("top", vec![var("x"), var("host"), Expr::IntegerLit(3)]));
    assert_eq!(expr("count(/usage_.*/)"), call("count", vec![Expr::RegexLit("usage_.*".into())]));
    assert_eq!(
        expr("non_negative_derivative(max(bytes), 1s)"),
        call("non_negative_derivative", vec![call("max", vec![var("bytes")]), Expr::DurationLit(1_000_000_000)])
    );
    assert_eq!(expr("moving_average(mean(x), 3)").to_string(), "moving_average(mean(x), 3)");
    assert_eq!(expr("cumulative_sum(x)"), call("cumulative_sum", vec![var("x")]));
    assert_eq!(expr("f()"), call("f", vec![]));
    assert_eq!(expr("f ( x )"), call("f", vec![var("x")]));
    assert_eq!(expr("now(1)"), call("now", vec![Expr::IntegerLit(1)]));
    assert_eq!(expr("DISTINCT x").to_string(), "distinct(x)");
    assert_eq!(err("SELECT count(distinct) FROM myseries"), "found ), expected (, identifier at line 1, char 22");
    assert_eq!(err("SELECT distinct FROM myseries"), "found FROM, expected (, identifier at line 1, char 17");
    assert_eq!(err("SELECT f(a b) FROM m"), "found b, expected ) at line 1, char 12");
    assert_eq!(err("SELECT count(/a/ + 1) FROM m"), "found +, expected ) at line 1, char 18");
}

#[test]
fn var_refs_and_casts() {
    assert_eq!(expr("x::float"), Expr::VarRef { name: "x".into(), data_type: Some(VarType::Float) });
    assert_eq!(expr("\"x y\"::tag"), Expr::VarRef { name: "x y".into(), data_type: Some(VarType::Tag) });
    assert_eq!(expr("x::FIELD"), Expr::VarRef { name: "x".into(), data_type: Some(VarType::Field) });
    assert_eq!(expr("x::Integer"), Expr::VarRef { name: "x".into(), data_type: Some(VarType::Integer) });
    for ty in ["unsigned", "string", "boolean"] {
        assert_eq!(expr(&format!("x::{ty}")).to_string(), format!("x::{ty}"));
    }
    assert_eq!(expr("*::field"), Expr::Wildcard(Some(WildcardType::Field)));
    assert_eq!(expr("*::tag"), Expr::Wildcard(Some(WildcardType::Tag)));
    assert_eq!(expr("cpu.usage"), var("cpu.usage"));
    assert_eq!(expr("a..b"), var("a..b"));
    assert_eq!(expr("cpu.usage").to_string(), "\"cpu.usage\"");
    assert_eq!(
        err("SELECT x::bogus FROM m"),
        "found bogus, expected float, integer, unsigned, string, boolean, field, tag at line 1, char 11"
    );
    assert_eq!(err("SELECT *::float FROM m"), "found float, expected field, tag at line 1, char 11");
    assert_eq!(err("SELECT a.b.c.d FROM m"), "too many segments in \"a.b.c.d\" at line 1, char 8");
    assert!(expr("time").is_time_ref());
    assert!(expr("\"TIME\"").is_time_ref());
}

#[test]
fn quoted_identifiers() {
    let s = select(r#"SELECT "usage user" AS "the \"usage\"", "from" FROM "my db"."my rp"."cpu load""#);
    assert_eq!(s.fields[0], Field { expr: var("usage user"), alias: Some("the \"usage\"".into()) });
    assert_eq!(s.fields[1].expr, var("from"));
    assert_eq!(
        s.from,
        vec![Source::Measurement(Measurement {
            database: Some("my db".into()),
            retention_policy: Some("my rp".into()),
            name: MeasurementName::Name("cpu load".into()),
        })]
    );
    assert_eq!(
        roundtrip(r#"SELECT "usage user" AS "the \"usage\"", "from" FROM "my db"."my rp"."cpu load""#),
        r#"SELECT "usage user" AS "the \"usage\"", "from" FROM "my db"."my rp"."cpu load""#
    );
    assert_eq!(quote_ident("cpu_1"), "cpu_1");
    assert_eq!(quote_ident("_x"), "_x");
    assert_eq!(quote_ident("1x"), "\"1x\"");
    assert_eq!(quote_ident(""), "\"\"");
    assert_eq!(quote_ident("select"), "\"select\"");
    assert_eq!(quote_ident("Limit"), "\"Limit\"");
    assert_eq!(quote_ident("ünï"), "\"ünï\"");
    assert_eq!(quote_ident("a\\b\nc"), "\"a\\\\b\\nc\"");
    assert_eq!(quote_string("it's"), "'it\\'s'");
    assert!(is_keyword("measurements") && is_keyword("TRUE") && !is_keyword("time") && !is_keyword("fill"));
    assert_eq!(err("SELECT \"abc FROM m"), "unterminated quoted identifier at line 1, char 8");
    // Keywords are reserved, as in InfluxDB.
    assert_eq!(err("SELECT key FROM m"), "found KEY, expected identifier, string, number, bool at line 1, char 8");
}

#[test]
fn keywords_are_case_insensitive() {
    let a =
        stmt("select MEAN(x) As m from cpu Where host = 'a' Group By Time(1h) Fill(None) Order By time Desc Limit 1");
    let b =
        stmt("SELECT mean(x) AS m FROM cpu WHERE host = 'a' GROUP BY time(1h) fill(none) ORDER BY time DESC LIMIT 1");
    assert_eq!(a, b);
    // Identifiers are not: `Host` and `host` differ.
    assert_ne!(expr("Host"), expr("host"));
}

#[test]
fn regexes() {
    assert_eq!(
        expr("host =~ /^server-\\d+$/"),
        bin(var("host"), BinaryOp::EqRegex, Expr::RegexLit("^server-\\d+$".into()))
    );
    assert_eq!(expr("host !~ /a\\/b/"), bin(var("host"), BinaryOp::NotEqRegex, Expr::RegexLit("a/b".into())));
    // `\\/` is a backslash then an escaped slash, as in InfluxDB.
    assert_eq!(expr("x =~ /a\\\\/b/"), bin(var("x"), BinaryOp::EqRegex, Expr::RegexLit("a\\/b".into())));
    assert_eq!(expr("x =~ /it's/"), bin(var("x"), BinaryOp::EqRegex, Expr::RegexLit("it's".into())));
    assert_eq!(expr("x =~ /.*/"), bin(var("x"), BinaryOp::EqRegex, Expr::RegexLit(".*".into())));
    assert_eq!(expr("x =~ /* note */ /a/"), bin(var("x"), BinaryOp::EqRegex, Expr::RegexLit("a".into())));
    assert_eq!(expr("x =~ //"), bin(var("x"), BinaryOp::EqRegex, Expr::RegexLit(String::new())));
    assert_eq!(
        expr("a =~ /x/ AND b !~ /y/"),
        bin(
            bin(var("a"), BinaryOp::EqRegex, Expr::RegexLit("x".into())),
            BinaryOp::And,
            bin(var("b"), BinaryOp::NotEqRegex, Expr::RegexLit("y".into()))
        )
    );
    assert_eq!(expr("a / b / c"), bin(bin(var("a"), BinaryOp::Div, var("b")), BinaryOp::Div, var("c")));
    for q in [
        "SELECT /usage_.*/ FROM cpu",
        "SELECT /a\\/b/, x FROM /cpu.*/",
        "SELECT x FROM db.rp./cpu\\d/, db../m/, rp./n/",
        "SELECT x FROM m GROUP BY /host|region/",
        "SELECT x FROM m WHERE host =~ /a\\\\/b/",
        "SHOW TAG VALUES WITH KEY =~ /ho.*/",
        "SHOW MEASUREMENTS WITH MEASUREMENT =~ /cpu\\/x/",
    ] {
        roundtrip(q);
    }
    assert_eq!(roundtrip("SELECT x FROM m WHERE h =~ /a\\/b\\d/"), "SELECT x FROM m WHERE h =~ /a\\/b\\d/");
    // InfluxDB says char 42 here (the space before the string); the string starts at char 43.
    assert_eq!(
        err("SELECT field1 from myseries WHERE host =~ 'asd' LIMIT 1"),
        "found asd, expected regex at line 1, char 43"
    );
    assert_eq!(err("SELECT x FROM m WHERE h =~ /abc"), "unterminated regex at line 1, char 28");
    assert_eq!(err("SELECT x FROM m WHERE h =~ /a\nb/"), "bad regex: it contains a new line at line 1, char 28");
}

#[test]
fn comments_and_whitespace() {
    let a = stmt("SELECT /* fields */ x -- the value\n FROM\tm /* where? */ WHERE -- none\r\n y = 1 -- end");
    assert_eq!(a, stmt("SELECT x FROM m WHERE y = 1"));
    assert_eq!(stmt("/**/SELECT/***/x/* a */FROM/*b*/m"), stmt("SELECT x FROM m"));
    assert_eq!(err("SELECT x FROM m /* open"), "unterminated comment at line 1, char 17");
    assert_eq!(parse_query("-- nothing\n;;/* x */;").unwrap(), vec![]);
}

// ---------------------------------------------------------------------------------------------
// SELECT clauses.

#[test]
fn sources() {
    let s = select("SELECT x FROM cpu, \"db\".\"rp\".mem, db..disk, rp.net, /^io/, db.rp./a/, db../b/, rp./c/");
    let regex = |db: Option<&str>, rp: Option<&str>, re: &str| {
        Source::Measurement(Measurement {
            database: db.map(Into::into),
            retention_policy: rp.map(Into::into),
            name: MeasurementName::Regex(re.into()),
        })
    };
    let named = |db: Option<&str>, rp: Option<&str>, n: &str| {
        Source::Measurement(Measurement {
            database: db.map(Into::into),
            retention_policy: rp.map(Into::into),
            name: MeasurementName::Name(n.into()),
        })
    };
    assert_eq!(
        s.from,
        vec![
            named(None, None, "cpu"),
            named(Some("db"), Some("rp"), "mem"),
            named(Some("db"), None, "disk"),
            named(None, Some("rp"), "net"),
            regex(None, None, "^io"),
            regex(Some("db"), Some("rp"), "a"),
            regex(Some("db"), None, "b"),
            regex(None, Some("rp"), "c"),
        ]
    );
    roundtrip("SELECT x FROM cpu, \"db\".\"rp\".mem, db..disk, rp.net, /^io/, db.rp./a/, db../b/, rp./c/");
    assert_eq!(err("SELECT x FROM a.b.c.d"), "too many segments in a.b.c.d at line 1, char 15");
    assert_eq!(err("SELECT field1 FROM 12"), "found 12, expected identifier at line 1, char 20");
    assert_eq!(err("SELECT x FROM"), "found EOF, expected identifier at line 1, char 14");
}

#[test]
fn subqueries() {
    let s = select("SELECT max(m) FROM (SELECT mean(x) AS m FROM cpu GROUP BY time(1m), host) WHERE time > now() - 1h");
    let Source::Subquery(inner) = &s.from[0] else { panic!() };
    assert_eq!(inner.fields[0].alias.as_deref(), Some("m"));
    assert_eq!(inner.dimensions.len(), 2);
    roundtrip("SELECT max(m) FROM (SELECT mean(x) AS m FROM cpu GROUP BY time(1m), host), mem WHERE time > now() - 1h");
    roundtrip("SELECT a FROM (SELECT b FROM (SELECT c FROM (SELECT d FROM m LIMIT 1)))");
    assert_eq!(err("SELECT x FROM (SHOW DATABASES)"), "found SHOW, expected SELECT at line 1, char 16");
    assert_eq!(err("SELECT x FROM (SELECT y FROM m"), "found EOF, expected ) at line 1, char 31");
    // No subqueries outside SELECT.
    assert_eq!(err("SHOW SERIES FROM (SELECT y FROM m)"), "found (, expected identifier at line 1, char 18");
}

#[test]
fn where_with_time() {
    let s = select("SELECT x FROM m WHERE time > now() - 1h AND time <= now() AND host = 'a'");
    let now_minus = bin(Expr::Now, BinaryOp::Sub, Expr::DurationLit(3_600_000_000_000));
    assert_eq!(
        s.condition,
        Some(bin(
            bin(bin(var("time"), BinaryOp::Gt, now_minus), BinaryOp::And, bin(var("time"), BinaryOp::LtEq, Expr::Now)),
            BinaryOp::And,
            bin(var("host"), BinaryOp::Eq, string("a"))
        ))
    );
    let s = select("SELECT x FROM m WHERE time >= 1451606400000000000 AND time < '2016-01-01' + 1d");
    assert_eq!(
        s.condition,
        Some(bin(
            bin(var("time"), BinaryOp::GtEq, Expr::IntegerLit(1_451_606_400_000_000_000)),
            BinaryOp::And,
            bin(
                var("time"),
                BinaryOp::Lt,
                bin(string("2016-01-01"), BinaryOp::Add, Expr::DurationLit(86_400_000_000_000))
            )
        ))
    );
}

#[test]
fn group_by_fill_order_limit_tz() {
    let s = select(
        "SELECT mean(x) FROM m GROUP BY time(1h, -15m), host, \"region\" fill(previous) ORDER BY time DESC \
         LIMIT 10 OFFSET 5 SLIMIT 3 SOFFSET 2 tz('Europe/Paris')",
    );
    assert_eq!(
        s.dimensions,
        vec![
            Dimension::Time { interval_ns: 3_600_000_000_000, offset: Some(TimeOffset::Duration(-900_000_000_000)) },
            Dimension::Tag("host".into()),
            Dimension::Tag("region".into()),
        ]
    );
    assert_eq!(s.fill, Some(Fill::Previous));
    assert!(s.order_desc);
    assert_eq!((s.limit, s.offset, s.slimit, s.soffset), (Some(10), Some(5), Some(3), Some(2)));
    assert_eq!(s.timezone.as_deref(), Some("Europe/Paris"));

    let time = |q: &str| select(q).group_by_time();
    assert_eq!(time("SELECT mean(x) FROM m GROUP BY time(10s, now())"), Some((10_000_000_000, Some(TimeOffset::Now))));
    assert_eq!(
        time("SELECT mean(x) FROM m GROUP BY time(1d,1h)"),
        Some((86_400_000_000_000, Some(TimeOffset::Duration(3_600_000_000_000))))
    );
    assert_eq!(select("SELECT x FROM m GROUP BY *").dimensions, vec![Dimension::Wildcard]);
    assert_eq!(select("SELECT x FROM m GROUP BY /^h/").dimensions, vec![Dimension::Regex("^h".into())]);
    assert_eq!(select("SELECT x FROM m GROUP BY host::tag").dimensions, vec![Dimension::Tag("host".into())]);
    for (q, fill) in [
        ("fill(null)", Fill::Null),
        ("fill(none)", Fill::None),
        ("fill(previous)", Fill::Previous),
        ("fill(linear)", Fill::Linear),
        ("fill(0)", Fill::Integer(0)),
        ("fill(-1)", Fill::Integer(-1)),
        ("fill(1.5)", Fill::Float(1.5)),
        ("FILL(NULL)", Fill::Null),
    ] {
        let text = format!("SELECT mean(x) FROM m GROUP BY time(1m) {q}");
        assert_eq!(select(&text).fill, Some(fill), "{q}");
        roundtrip(&text);
    }
    assert!(!select("SELECT x FROM m ORDER BY time ASC").order_desc);
    assert!(select("SELECT x FROM m ORDER BY DESC").order_desc);
    assert!(!select("SELECT x FROM m ORDER BY time").order_desc);
    roundtrip(
        "SELECT mean(x) FROM m GROUP BY time(1h, -15m), host, \"region\" fill(previous) ORDER BY time DESC \
         LIMIT 10 OFFSET 5 SLIMIT 3 SOFFSET 2 tz('Europe/Paris')",
    );
}

#[test]
fn group_by_errors() {
    let cases = [
        ("SELECT x FROM m GROUP BY time()", "time dimension expected 1 or 2 arguments at line 1, char 26"),
        ("SELECT x FROM m GROUP BY time(1h, 1m, 1s)", "time dimension expected 1 or 2 arguments at line 1, char 26"),
        ("SELECT x FROM m GROUP BY time(0s)", "time dimension must have a positive duration at line 1, char 26"),
        ("SELECT x FROM m GROUP BY time(-1s)", "time dimension must have a positive duration at line 1, char 26"),
        ("SELECT x FROM m GROUP BY time(x)", "time dimension must have duration argument at line 1, char 26"),
        ("SELECT x FROM m GROUP BY time(1h, x)", "time dimension offset must be duration or now() at line 1, char 26"),
        ("SELECT x FROM m GROUP BY time", "time() is a function and expects at least one argument at line 1, char 26"),
        ("SELECT x FROM m GROUP BY host, mean(x)", "only time() calls allowed in dimensions at line 1, char 32"),
        ("SELECT x FROM m GROUP BY 'a'", "only time and tag dimensions allowed at line 1, char 26"),
        ("SELECT x FROM m GROUP BY time(1h), time(1m)", "multiple time dimensions at line 1, char 36"),
        ("SELECT field1 FROM myseries GROUP", "found EOF, expected BY at line 1, char 34"),
        ("SELECT x FROM m GROUP BY", "found EOF, expected identifier, string, number, bool at line 1, char 25"),
        (
            "SELECT mean(x) FROM m fill()",
            "fill requires an argument, e.g.: 0, null, none, previous, linear at line 1, char 23",
        ),
        (
            "SELECT mean(x) FROM m fill(1, 2)",
            "fill requires an argument, e.g.: 0, null, none, previous, linear at line 1, char 23",
        ),
        ("SELECT mean(x) FROM m fill('a')", "expected number argument in fill() at line 1, char 23"),
        ("SELECT mean(x) FROM m fill(other)", "expected number argument in fill() at line 1, char 23"),
        ("SELECT mean(x) FROM m FILL + value", "found +, expected ( at line 1, char 28"),
        ("SELECT x FROM m tz(1)", "expected string argument in tz() at line 1, char 17"),
        ("SELECT x FROM m tz()", "tz requires exactly one argument at line 1, char 17"),
        ("SELECT field1 FROM myseries ORDER", "found EOF, expected BY at line 1, char 34"),
        ("SELECT field1 FROM myseries ORDER BY", "found EOF, expected identifier, ASC, DESC at line 1, char 37"),
        ("SELECT field1 FROM myseries ORDER BY /", "found /, expected identifier, ASC, DESC at line 1, char 38"),
        ("SELECT field1 FROM myseries ORDER BY 1", "found 1, expected identifier, ASC, DESC at line 1, char 38"),
        ("SELECT field1 FROM myseries ORDER BY time ASC,", "found EOF, expected identifier at line 1, char 47"),
        (
            "SELECT field1 FROM myseries ORDER BY time, field1",
            "only ORDER BY time supported at this time at line 1, char 44",
        ),
        ("SELECT field1 FROM myseries ORDER BY value", "only ORDER BY time supported at this time at line 1, char 38"),
        ("SELECT field1 FROM myseries LIMIT", "found EOF, expected integer at line 1, char 34"),
        ("SELECT field1 FROM myseries LIMIT 10.5", "found 10.5, expected integer at line 1, char 35"),
        ("SELECT field1 FROM myseries OFFSET 10.5", "found 10.5, expected integer at line 1, char 36"),
        ("SELECT field1 FROM myseries LIMIT -1", "found -, expected integer at line 1, char 35"),
        ("SELECT x FROM m LIMIT 99999999999999999999", "unable to parse integer at line 1, char 23"),
        ("SELECT x FROM m OFFSET 1 LIMIT 1", "found LIMIT, expected ; at line 1, char 26"),
    ];
    for (q, e) in cases {
        assert_eq!(err(q), e, "{q}");
    }
}

#[test]
fn field_list() {
    let s = select("SELECT mean(x) AS avg, x + 1, -y AS neg, *, /re/ AS r, 'lit', 2 FROM m");
    assert_eq!(s.fields.len(), 7);
    assert_eq!(s.fields[0].alias.as_deref(), Some("avg"));
    assert_eq!(s.fields[1].expr, bin(var("x"), BinaryOp::Add, Expr::IntegerLit(1)));
    assert_eq!(s.fields[4], Field { expr: Expr::RegexLit("re".into()), alias: Some("r".into()) });
    assert_eq!(
        err("SELECT value > 2 FROM cpu"),
        "invalid operator > in SELECT clause; operator is intended for WHERE clause at line 1, char 8"
    );
    assert_eq!(
        err("SELECT a, s =~ /foo/ FROM cpu"),
        "invalid operator =~ in SELECT clause; operator is intended for WHERE clause at line 1, char 11"
    );
    assert_eq!(
        err("SELECT mean(a AND b) FROM cpu"),
        "invalid operator AND in SELECT clause; operator is intended for WHERE clause at line 1, char 8"
    );
    assert_eq!(err("SELECT field1 AS"), "found EOF, expected identifier at line 1, char 17");
    assert_eq!(err("SELECT field1 X"), "found X, expected FROM at line 1, char 15");
    assert_eq!(err("SELECT"), "found EOF, expected identifier, string, number, bool at line 1, char 7");
    assert_eq!(err("SELECT FROM m"), "found FROM, expected identifier, string, number, bool at line 1, char 8");
    assert_eq!(
        err("SELECT field1 FROM \"series\" WHERE X +;"),
        "found ;, expected identifier, string, number, bool at line 1, char 38"
    );
}

#[test]
fn into_targets() {
    let into = |q: &str| select(q).into.unwrap();
    let t = |db: Option<&str>, rp: Option<&str>, m: Option<&str>| Target {
        database: db.map(Into::into),
        retention_policy: rp.map(Into::into),
        measurement: m.map(Into::into),
    };
    assert_eq!(into("SELECT x INTO m2 FROM m"), t(None, None, Some("m2")));
    assert_eq!(into("SELECT x INTO rp.m2 FROM m"), t(None, Some("rp"), Some("m2")));
    assert_eq!(into("SELECT x INTO db.rp.m2 FROM m"), t(Some("db"), Some("rp"), Some("m2")));
    assert_eq!(into("SELECT x INTO db..m2 FROM m"), t(Some("db"), None, Some("m2")));
    assert_eq!(into("SELECT x INTO rp.:MEASUREMENT FROM m"), t(None, Some("rp"), None));
    assert_eq!(into("SELECT x INTO db.rp.:measurement FROM m"), t(Some("db"), Some("rp"), None));
    assert_eq!(into("SELECT x INTO db..:MEASUREMENT FROM m"), t(Some("db"), None, None));
    for q in [
        "SELECT x INTO m2 FROM m",
        "SELECT x INTO rp.m2 FROM m",
        "SELECT x INTO db.rp.m2 FROM m",
        "SELECT x INTO db..m2 FROM m",
        "SELECT x INTO rp.:MEASUREMENT FROM m",
        "SELECT x INTO db.rp.:MEASUREMENT FROM m",
        "SELECT x INTO db..:MEASUREMENT FROM m",
        "SELECT x INTO \"\".:MEASUREMENT FROM m",
    ] {
        roundtrip(q);
    }
    assert_eq!(err("SELECT x INTO a.b.c.d FROM m"), "too many segments in INTO target at line 1, char 15");
    assert_eq!(err("SELECT x INTO a.b.c.:MEASUREMENT FROM m"), "too many segments in INTO target at line 1, char 15");
    assert_eq!(err("SELECT x INTO FROM m"), "found FROM, expected identifier at line 1, char 15");
}

// ---------------------------------------------------------------------------------------------
// Other statements.

#[test]
fn retention_policy_statements_parse_in_influxdb_grammar() {
    const D: i64 = 86_400_000_000_000;
    let rp = |duration_ns, replication, shard_duration_ns, default| RetentionPolicyStatement {
        name: "autogen".into(),
        database: "db".into(),
        duration_ns,
        replication,
        shard_duration_ns,
        default,
    };
    assert_eq!(stmt("ALTER RETENTION POLICY autogen ON db DURATION 30d"), Statement::AlterRetentionPolicy(rp(Some(30 * D), None, None, false)));
    // Options in any order, as InfluxDB accepts them.
    assert_eq!(
        stmt("alter retention policy \"autogen\" on \"db\" DEFAULT SHARD DURATION 1d REPLICATION 1 DURATION INF"),
        Statement::AlterRetentionPolicy(rp(Some(0), Some(1), Some(D), true))
    );
    assert_eq!(
        stmt("CREATE RETENTION POLICY autogen ON db DURATION 7d REPLICATION 1 SHARD DURATION 1d DEFAULT"),
        Statement::CreateRetentionPolicy(rp(Some(7 * D), Some(1), Some(D), true))
    );
    assert_eq!(stmt("CREATE RETENTION POLICY autogen ON db DURATION 1h REPLICATION 1"), Statement::CreateRetentionPolicy(rp(Some(D / 24), Some(1), None, false)));
    for q in [
        "ALTER RETENTION POLICY autogen ON db DURATION 30d",
        "ALTER RETENTION POLICY autogen ON db DURATION INF REPLICATION 1 SHARD DURATION 1d DEFAULT",
        "ALTER RETENTION POLICY \"my rp\" ON \"my db\" DEFAULT",
        "CREATE RETENTION POLICY autogen ON db DURATION 1h REPLICATION 1 DEFAULT",
    ] {
        roundtrip(q);
    }
}

#[test]
fn malformed_retention_policy_statements_are_refused_where_they_go_wrong() {
    assert_eq!(
        err("ALTER RETENTION POLICY autogen ON db"),
        "found EOF, expected DURATION, REPLICATION, SHARD, DEFAULT at line 1, char 37"
    );
    assert_eq!(err("ALTER RETENTION POLICY autogen ON db DURATION 1d DURATION 2d"), "found duplicate DURATION at line 1, char 50");
    assert_eq!(err("ALTER RETENTION POLICY autogen DURATION 1d"), "found DURATION, expected ON at line 1, char 32");
    assert_eq!(err("ALTER RETENTION POLICY autogen ON db DURATION 1x"), "invalid duration 1x at line 1, char 47");
    assert_eq!(err("ALTER DATABASE db"), "found DATABASE, expected RETENTION at line 1, char 7");
    // CREATE needs DURATION then REPLICATION, in that order.
    assert_eq!(err("CREATE RETENTION POLICY rp ON db DURATION 1d"), "found EOF, expected REPLICATION at line 1, char 45");
    assert_eq!(err("CREATE RETENTION POLICY rp ON db REPLICATION 1"), "found REPLICATION, expected DURATION at line 1, char 34");
    assert_eq!(
        err("CREATE RETENTION POLICY rp ON db DURATION 1d REPLICATION 0"),
        "invalid value 0: must be 1 <= n <= 2147483647 at line 1, char 58"
    );
    assert!(err("DROP RETENTION POLICY autogen ON db").contains("expected DATABASE, MEASUREMENT, SERIES"));
}

#[test]
fn database_statements() {
    assert_eq!(stmt("SHOW DATABASES"), Statement::ShowDatabases);
    assert_eq!(
        stmt("CREATE DATABASE mydb"),
        Statement::CreateDatabase(CreateDatabaseStatement { name: "mydb".into(), retention_policy: None })
    );
    assert_eq!(
        stmt("CREATE DATABASE \"my db\" WITH DURATION 30d REPLICATION 1 SHARD DURATION 1d NAME \"rp 1\""),
        Statement::CreateDatabase(CreateDatabaseStatement {
            name: "my db".into(),
            retention_policy: Some(RetentionPolicySpec {
                duration_ns: Some(30 * 86_400_000_000_000),
                replication: Some(1),
                shard_duration_ns: Some(86_400_000_000_000),
                name: Some("rp 1".into()),
            }),
        })
    );
    let Statement::CreateDatabase(c) = stmt("CREATE DATABASE d WITH DURATION INF") else { panic!() };
    assert_eq!(c.retention_policy.unwrap().duration_ns, Some(0));
    let Statement::CreateDatabase(c) = stmt("CREATE DATABASE d WITH NAME r") else { panic!() };
    assert_eq!(c.retention_policy, Some(RetentionPolicySpec { name: Some("r".into()), ..Default::default() }));
    assert_eq!(stmt("DROP DATABASE mydb"), Statement::DropDatabase { name: "mydb".into() });
    assert_eq!(stmt("SHOW RETENTION POLICIES"), Statement::ShowRetentionPolicies { database: None });
    assert_eq!(
        stmt("SHOW RETENTION POLICIES ON \"db\""),
        Statement::ShowRetentionPolicies { database: Some("db".into()) }
    );
    for q in [
        "SHOW DATABASES",
        "CREATE DATABASE mydb",
        "CREATE DATABASE \"my db\" WITH DURATION 30d REPLICATION 1 SHARD DURATION 1d NAME \"rp 1\"",
        "CREATE DATABASE d WITH DURATION INF",
        "CREATE DATABASE d WITH SHARD DURATION 0s",
        "CREATE DATABASE d WITH REPLICATION 3",
        "DROP DATABASE \"select\"",
        "SHOW RETENTION POLICIES ON db",
    ] {
        roundtrip(q);
    }
    for (q, e) in [
        ("CREATE DATABASE", "found EOF, expected identifier at line 1, char 16"),
        (
            "CREATE DATABASE \"testdb\" WITH",
            "found EOF, expected DURATION, NAME, REPLICATION, SHARD at line 1, char 30",
        ),
        ("CREATE DATABASE \"testdb\" WITH DURATION", "found EOF, expected duration at line 1, char 39"),
        ("CREATE DATABASE \"testdb\" WITH DURATION 1", "found 1, expected duration at line 1, char 40"),
        ("CREATE DATABASE \"testdb\" WITH REPLICATION", "found EOF, expected integer at line 1, char 42"),
        (
            "CREATE DATABASE \"testdb\" WITH REPLICATION 0",
            "invalid value 0: must be 1 <= n <= 2147483647 at line 1, char 43",
        ),
        ("CREATE DATABASE \"testdb\" WITH NAME", "found EOF, expected identifier at line 1, char 35"),
        ("CREATE DATABASE \"testdb\" WITH SHARD", "found EOF, expected DURATION at line 1, char 36"),
        ("CREATE DATABASE d WITH DURATION 15251w", "invalid duration 15251w at line 1, char 33"),
        ("CREATE USER u", "found USER, expected DATABASE, RETENTION at line 1, char 8"),
        ("DROP DATABASE", "found EOF, expected identifier at line 1, char 14"),
        ("DROP FOO", "found FOO, expected DATABASE, MEASUREMENT, SERIES at line 1, char 6"),
        ("SHOW RETENTION", "found EOF, expected POLICIES at line 1, char 15"),
        ("SHOW RETENTION ON", "found ON, expected POLICIES at line 1, char 16"),
        ("SHOW RETENTION POLICIES ON", "found EOF, expected identifier at line 1, char 27"),
        (
            "SHOW FOO",
            "found FOO, expected DATABASES, FIELD, MEASUREMENT, MEASUREMENTS, RETENTION, SERIES, TAG at line 1, char 6",
        ),
    ] {
        assert_eq!(err(q), e, "{q}");
    }
}

#[test]
fn show_measurements() {
    let s = |q: &str| match stmt(q) {
        Statement::ShowMeasurements(s) => s,
        other => panic!("{other:?}"),
    };
    let all = s("SHOW MEASUREMENTS ON db WITH MEASUREMENT =~ /cpu.*/ WHERE host = 'a' LIMIT 10 OFFSET 2");
    assert_eq!(all.database.as_deref(), Some("db"));
    assert_eq!(
        all.with_measurement,
        Some(Measurement { database: None, retention_policy: None, name: MeasurementName::Regex("cpu.*".into()) })
    );
    assert_eq!(all.condition, Some(bin(var("host"), BinaryOp::Eq, string("a"))));
    assert_eq!((all.limit, all.offset), (Some(10), Some(2)));
    assert_eq!(s("SHOW MEASUREMENTS WITH MEASUREMENT = cpu").with_measurement, Some(m("cpu")));
    assert_eq!(
        s("SHOW MEASUREMENTS"),
        ShowMeasurementsStatement {
            database: None,
            with_measurement: None,
            condition: None,
            limit: None,
            offset: None
        }
    );
    for q in [
        "SHOW MEASUREMENTS",
        "SHOW MEASUREMENTS LIMIT 1",
        "SHOW MEASUREMENTS ON db WITH MEASUREMENT =~ /cpu.*/ WHERE host = 'a' LIMIT 10 OFFSET 2",
        "SHOW MEASUREMENTS WITH MEASUREMENT = \"my m\"",
        "SHOW MEASUREMENTS WITH MEASUREMENT = /x/",
    ] {
        roundtrip(q);
    }
    assert_eq!(err("SHOW MEASUREMENTS WITH MEASUREMENT > x"), "found >, expected =, =~ at line 1, char 36");
    assert_eq!(err("SHOW MEASUREMENTS WITH x"), "found x, expected MEASUREMENT at line 1, char 24");
}

#[test]
fn show_tag_keys_values_fields_series() {
    let Statement::ShowTagKeys(k) =
        stmt("SHOW TAG KEYS ON db FROM cpu, mem WHERE host = 'a' LIMIT 5 OFFSET 1 SLIMIT 2 SOFFSET 3")
    else {
        panic!()
    };
    assert_eq!(k.database.as_deref(), Some("db"));
    assert_eq!(k.from, vec![m("cpu"), m("mem")]);
    assert_eq!((k.limit, k.offset, k.slimit, k.soffset), (Some(5), Some(1), Some(2), Some(3)));
    assert_eq!(k.with_key, None);

    let values = |q: &str| match stmt(q) {
        Statement::ShowTagValues(v) => v,
        other => panic!("{other:?}"),
    };
    let v = values("SHOW TAG VALUES ON db FROM cpu WITH KEY = host WHERE region = 'eu' LIMIT 3");
    assert_eq!(v.with_key, TagKeyFilter::Eq("host".into()));
    assert_eq!(v.from, vec![m("cpu")]);
    assert_eq!(v.condition, Some(bin(var("region"), BinaryOp::Eq, string("eu"))));
    assert_eq!(values("SHOW TAG VALUES WITH KEY != host").with_key, TagKeyFilter::NotEq("host".into()));
    assert_eq!(
        values("SHOW TAG VALUES WITH KEY IN (host, \"region x\")").with_key,
        TagKeyFilter::In(vec!["host".into(), "region x".into()])
    );
    assert_eq!(values("SHOW TAG VALUES WITH KEY =~ /h.*/").with_key, TagKeyFilter::Regex("h.*".into()));
    assert_eq!(values("SHOW TAG VALUES WITH KEY !~ /h.*/").with_key, TagKeyFilter::NotRegex("h.*".into()));
    assert_eq!(
        values("SHOW TAG VALUES FROM /c.*/ WITH KEY = \"host\"").from[0].name,
        MeasurementName::Regex("c.*".into())
    );

    let Statement::ShowFieldKeys(f) = stmt("SHOW FIELD KEYS ON db FROM cpu LIMIT 1 OFFSET 2") else { panic!() };
    assert_eq!(
        f,
        ShowFieldKeysStatement { database: Some("db".into()), from: vec![m("cpu")], limit: Some(1), offset: Some(2) }
    );

    let Statement::ShowSeries(s) =
        stmt("SHOW SERIES ON db FROM cpu WHERE host = 'a' ORDER BY time DESC LIMIT 10 OFFSET 1")
    else {
        panic!()
    };
    assert_eq!(s.from, vec![m("cpu")]);
    assert_eq!((s.limit, s.offset), (Some(10), Some(1)));

    for q in [
        "SHOW TAG KEYS",
        "SHOW TAG KEYS ON db FROM cpu, mem WHERE host = 'a' LIMIT 5 OFFSET 1 SLIMIT 2 SOFFSET 3",
        "SHOW TAG KEYS FROM cpu WITH KEY IN (a, b)",
        "SHOW TAG VALUES ON db FROM cpu WITH KEY = host WHERE region = 'eu' LIMIT 3",
        "SHOW TAG VALUES WITH KEY != host",
        "SHOW TAG VALUES WITH KEY IN (host, \"region x\")",
        "SHOW TAG VALUES WITH KEY =~ /h.*/ OFFSET 1",
        "SHOW TAG VALUES WITH KEY !~ /h\\/x/",
        "SHOW FIELD KEYS",
        "SHOW FIELD KEYS ON db FROM cpu LIMIT 1 OFFSET 2",
        "SHOW SERIES",
        "SHOW SERIES ON db FROM cpu WHERE host = 'a' LIMIT 10 OFFSET 1",
    ] {
        roundtrip(q);
    }
    for (q, e) in [
        ("SHOW TAG VALUES", "found EOF, expected WITH at line 1, char 16"),
        ("SHOW TAG VALUES WITH KEY", "found EOF, expected IN, =, !=, =~, !~ at line 1, char 25"),
        ("SHOW TAG VALUES WITH KEY =~ host", "found host, expected regex at line 1, char 29"),
        ("SHOW TAG VALUES WITH KEY IN host", "found host, expected ( at line 1, char 29"),
        ("SHOW TAG VALUES WITH KEY IN (a,)", "found ), expected identifier at line 1, char 32"),
        ("SHOW TAG FOO", "found FOO, expected KEY, KEYS, VALUES at line 1, char 10"),
        ("SHOW FIELD FOO", "found FOO, expected KEY, KEYS at line 1, char 12"),
        ("SHOW FIELD KEYS WHERE x = 1", "found WHERE, expected ; at line 1, char 17"),
    ] {
        assert_eq!(err(q), e, "{q}");
    }
}

#[test]
fn cardinality_statements() {
    let c = |q: &str| match stmt(q) {
        Statement::ShowCardinality(c) => c,
        other => panic!("{other:?}"),
    };
    let s = c("SHOW SERIES EXACT CARDINALITY ON db FROM cpu WHERE host = 'a' GROUP BY region LIMIT 1");
    assert_eq!((s.kind, s.exact), (CardinalityKind::Series, true));
    assert_eq!(s.dimensions, vec![Dimension::Tag("region".into())]);
    assert_eq!(c("SHOW SERIES CARDINALITY").kind, CardinalityKind::Series);
    assert_eq!(c("SHOW MEASUREMENT CARDINALITY").kind, CardinalityKind::Measurement);
    assert!(c("SHOW MEASUREMENT EXACT CARDINALITY").exact);
    assert_eq!(c("SHOW TAG KEY CARDINALITY FROM cpu").kind, CardinalityKind::TagKey);
    assert_eq!(c("SHOW FIELD KEY EXACT CARDINALITY").kind, CardinalityKind::FieldKey);
    let tv = c("SHOW TAG VALUES EXACT CARDINALITY WITH KEY = host");
    assert_eq!((tv.kind, tv.with_key), (CardinalityKind::TagValues, Some(TagKeyFilter::Eq("host".into()))));
    for q in [
        "SHOW SERIES EXACT CARDINALITY ON db FROM cpu WHERE host = 'a' GROUP BY region LIMIT 1",
        "SHOW SERIES CARDINALITY",
        "SHOW MEASUREMENT CARDINALITY ON db",
        "SHOW TAG KEY EXACT CARDINALITY FROM cpu",
        "SHOW TAG VALUES CARDINALITY FROM cpu WITH KEY IN (a, b) WHERE x = 'y' OFFSET 3",
        "SHOW FIELD KEY CARDINALITY",
    ] {
        roundtrip(q);
    }
    assert_eq!(err("SHOW MEASUREMENT EXACT"), "found EOF, expected CARDINALITY at line 1, char 23");
    assert_eq!(err("SHOW TAG KEY"), "found EOF, expected EXACT, CARDINALITY at line 1, char 13");
    assert_eq!(err("SHOW TAG VALUES CARDINALITY"), "found EOF, expected WITH at line 1, char 28");
}

#[test]
fn drop_and_delete() {
    assert_eq!(stmt("DROP MEASUREMENT cpu"), Statement::DropMeasurement { name: "cpu".into() });
    assert_eq!(
        stmt("DROP SERIES FROM cpu WHERE host = 'a'"),
        Statement::DropSeries(DropSeriesStatement {
            from: vec![m("cpu")],
            condition: Some(bin(var("host"), BinaryOp::Eq, string("a")))
        })
    );
    assert_eq!(
        stmt("DROP SERIES WHERE host = 'a'"),
        Statement::DropSeries(DropSeriesStatement {
            from: vec![],
            condition: Some(bin(var("host"), BinaryOp::Eq, string("a")))
        })
    );
    assert_eq!(stmt("DELETE FROM cpu"), Statement::Delete(DeleteStatement { from: vec![m("cpu")], condition: None }));
    let Statement::Delete(d) = stmt("DELETE FROM /c.*/, rp.mem WHERE time < '2020-01-01'") else { panic!() };
    assert_eq!(d.from.len(), 2);
    for q in [
        "DROP MEASUREMENT \"my m\"",
        "DROP SERIES FROM cpu WHERE host = 'a'",
        "DROP SERIES FROM cpu, /m.*/",
        "DROP SERIES WHERE host = 'a'",
        "DELETE FROM cpu",
        "DELETE WHERE time < '2020-01-01'",
        "DELETE FROM /c.*/, rp.mem WHERE time < '2020-01-01'",
    ] {
        roundtrip(q);
    }
    for (q, e) in [
        ("DELETE", "found EOF, expected FROM, WHERE at line 1, char 7"),
        ("DELETE FROM", "found EOF, expected identifier at line 1, char 12"),
        ("DELETE FROM &foo.myseries", "found &, expected identifier at line 1, char 13"),
        ("DELETE FROM myseries WHERE", "found EOF, expected identifier, string, number, bool at line 1, char 27"),
        ("DELETE FROM foo..myseries", "database not supported at line 1, char 13"),
        ("DROP MEASUREMENT", "found EOF, expected identifier at line 1, char 17"),
        ("DROP SERIES", "found EOF, expected FROM, WHERE at line 1, char 12"),
        ("DROP SERIES FROM", "found EOF, expected identifier at line 1, char 17"),
        ("DROP SERIES FROM \"foo\".myseries", "retention policy not supported at line 1, char 18"),
        ("DROP SERIES FROM foo..myseries", "database not supported at line 1, char 18"),
    ] {
        assert_eq!(err(q), e, "{q}");
    }
}

#[test]
fn explain() {
    let Statement::Explain(e) = stmt("EXPLAIN ANALYZE SELECT mean(x) FROM m") else { panic!() };
    assert!(e.analyze && !e.verbose);
    assert_eq!(e.statement.fields[0].expr, call("mean", vec![var("x")]));
    roundtrip("EXPLAIN SELECT x FROM m");
    roundtrip("EXPLAIN ANALYZE VERBOSE SELECT x FROM m");
    assert_eq!(err("EXPLAIN SHOW DATABASES"), "found SHOW, expected SELECT at line 1, char 9");
}

#[test]
fn multiple_statements() {
    let all = parse_query("SELECT x FROM m; SHOW DATABASES;\n DROP MEASUREMENT m ;;").unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(all[1], Statement::ShowDatabases);
    assert_eq!(parse_query("").unwrap(), vec![]);
    assert_eq!(parse_query("  ;  ").unwrap(), vec![]);
    assert_eq!(format_query(&all), "SELECT x FROM m; SHOW DATABASES; DROP MEASUREMENT m");
    assert_eq!(err("SELECT x FROM m SHOW DATABASES"), "found SHOW, expected ; at line 1, char 17");
    assert_eq!(err("blah blah"), "found blah, expected SELECT, DELETE, SHOW, CREATE, DROP, EXPLAIN, ALTER at line 1, char 1");
    assert_eq!(parse_statement("SHOW DATABASES;").unwrap(), Statement::ShowDatabases);
    assert_eq!(parse_statement("SHOW DATABASES; SHOW DATABASES").unwrap_err().message, "found SHOW, expected EOF");
    assert_eq!(parse_expr("a b").unwrap_err().to_string(), "found b, expected EOF at line 1, char 3");
}

// ---------------------------------------------------------------------------------------------
// Positions.

#[test]
fn error_positions() {
    let e = parse_query("SELECT x\nFROM m\nWHERE y = ").unwrap_err();
    assert_eq!((e.line, e.column, e.pos), (3, 11, 26));
    assert_eq!(e.to_string(), "found EOF, expected identifier, string, number, bool at line 3, char 11");
    // Columns count characters, not bytes.
    let e = parse_query("SELECT 'µµ', x FROM m WHERE ! ").unwrap_err();
    assert_eq!(e.to_string(), "found !, expected identifier, string, number, bool at line 1, char 29");
    assert_eq!(e.pos, "SELECT 'µµ', x FROM m WHERE ".len());
    let e = parse_query("SELECT x FROM m;\r\n  SELECT FROM").unwrap_err();
    assert_eq!((e.line, e.column), (2, 10));
    assert_eq!(ParseError::new("ab", 99, "m").pos, 2);
    assert_eq!(ParseError::new("µ", 1, "m").pos, 0);
}

// ---------------------------------------------------------------------------------------------
// Durations and time literals.

#[test]
fn durations() {
    let s = 1_000_000_000i64;
    for (text, ns) in [
        ("10s", 10 * s),
        ("1h30m", 5400 * s),
        ("100ms", 100_000_000),
        ("5u", 5_000),
        ("5µ", 5_000),
        ("5μ", 5_000),
        ("10ns", 10),
        ("1m", 60 * s),
        ("1d", 86_400 * s),
        ("2w", 14 * 86_400 * s),
        ("-15m", -900 * s),
        ("1w2d3h4m5s6ms7u8ns", (7 + 2) * 86_400 * s + 3 * 3600 * s + 4 * 60 * s + 5 * s + 6_000_000 + 7_000 + 8),
        ("0s", 0),
        ("9223372036854775807ns", i64::MAX),
    ] {
        assert_eq!(parse_duration(text), Some(ns), "{text}");
    }
    for text in
        ["", "-", "3", "1000", "w", "ms", "1.2w", "10x", "10n", "1h30", "1hh", "15251w", "9223372036854775808ns", "1 h"]
    {
        assert_eq!(parse_duration(text), None, "{text}");
    }
    for (ns, text) in [
        (0, "0s"),
        (1, "1ns"),
        (1_000, "1u"),
        (1_500, "1500ns"),
        (1_000_000, "1ms"),
        (s, "1s"),
        (90 * s, "90s"),
        (60 * s, "1m"),
        (3600 * s, "1h"),
        (86_400 * s, "1d"),
        (7 * 86_400 * s, "1w"),
        (8 * 86_400 * s, "8d"),
        (-900 * s, "-15m"),
    ] {
        assert_eq!(format_duration(ns), text);
        assert_eq!(parse_duration(text), Some(ns));
    }
}

#[test]
fn time_literals() {
    const T: i64 = 1_451_606_400_000_000_000; // 2016-01-01T00:00:00Z
    for (text, ns) in [
        ("2016-01-01T00:00:00Z", T),
        ("2016-01-01T00:00:00.000000000Z", T),
        ("2016-01-01t00:00:00z", T),
        ("2016-01-01T01:00:00+01:00", T),
        ("2015-12-31T19:30:00-04:30", T),
        ("2016-01-01 00:00:00", T),
        ("2016-01-01", T),
        ("2016-01-01T00:00:00.5Z", T + 500_000_000),
        ("2016-01-01 00:00:00.123456", T + 123_456_000),
        ("2016-01-01T00:00:00.123456789Z", T + 123_456_789),
        ("1970-01-01T00:00:00Z", 0),
        ("1969-12-31T23:59:59.999999999Z", -1),
        ("2000-02-29T12:00:00Z", 951_825_600_000_000_000),
        ("2262-04-11T23:47:16.854775807Z", i64::MAX),
        ("1677-09-21T00:12:43.145224192Z", i64::MIN),
    ] {
        assert_eq!(parse_time_literal(text), Some(ns), "{text}");
        assert!(looks_like_time_literal(text));
    }
    for text in [
        "",
        "2016",
        "2016-1-01",
        "2016-13-01",
        "2016-02-30",
        "2015-02-29",
        "2016-01-01T",
        "2016-01-01T24:00:00Z",
        "2016-01-01T00:60:00Z",
        "2016-01-01T00:00:60Z",
        "2016-01-01T00:00:00.Z",
        "2016-01-01T00:00:00.1234567890Z",
        "2016-01-01T00:00:00+0100",
        "2016-01-01T00:00:00+24:00",
        "2016-01-01T00:00:00Zx",
        "2016-01-01X00:00:00Z",
        "2262-04-11T23:47:16.854775808Z",
        "9999-12-31",
        "0000-01-01",
    ] {
        assert_eq!(parse_time_literal(text), None, "{text}");
    }
    assert!(!looks_like_time_literal("host_1"));
    assert!(looks_like_time_literal("2016-01-01 garbage"));
    // Without a zone the caller's zone applies; with one it wins.
    let naive = parse_time_literal_parts("2016-01-01 01:00:00").unwrap();
    assert_eq!(naive.offset_secs, None);
    assert_eq!(naive.to_utc_ns(3600), Some(T));
    let zoned = parse_time_literal_parts("2016-01-01T01:00:00+01:00").unwrap();
    assert_eq!(zoned.to_utc_ns(-7200), Some(T));
    for (ns, text) in [
        (T, "2016-01-01T00:00:00Z"),
        (T + 500_000_000, "2016-01-01T00:00:00.5Z"),
        (T + 123_456_789, "2016-01-01T00:00:00.123456789Z"),
        (T + 1, "2016-01-01T00:00:00.000000001Z"),
        (T + 120_000_000, "2016-01-01T00:00:00.12Z"),
        (0, "1970-01-01T00:00:00Z"),
        (-1, "1969-12-31T23:59:59.999999999Z"),
        (i64::MAX, "2262-04-11T23:47:16.854775807Z"),
        (i64::MIN, "1677-09-21T00:12:43.145224192Z"),
    ] {
        assert_eq!(format_time_rfc3339(ns), text);
    }
    // Every day over four centuries survives a round trip.
    let mut ns = -4_000_000_000_000_000_000i64;
    while ns < 4_000_000_000_000_000_000 {
        assert_eq!(parse_time_literal(&format_time_rfc3339(ns)), Some(ns));
        ns += 86_400_000_000_000 + 1_234_567_891;
    }
    // One writer over many times, of one day and of others, back and forth: each as written alone.
    let mut writer = crate::influxql::Rfc3339Writer::default();
    let mut out = String::new();
    let mut want = String::new();
    for ns in [T, T + 10_000_000_000, T + 86_399_999_999_999, T + 86_400_000_000_000, T - 1, T, -1, 0, i64::MAX, i64::MIN, T + 5] {
        writer.write(&mut out, ns);
        out.push(',');
        want.push_str(&format_time_rfc3339(ns));
        want.push(',');
    }
    assert_eq!(out, want);
    // Times met again and again (a rollup's buckets in every series), more of them than the writer
    // keeps, so that kept ones are found and replaced: each still as written alone.
    let (mut out, mut want) = (String::new(), String::new());
    for i in 0..2_000i64 {
        let ns = T + (i * 37 % 150) * 3_600_000_000_000 + i % 3;
        writer.write(&mut out, ns);
        want.push_str(&format_time_rfc3339(ns));
    }
    assert_eq!(out, want);
}

// ---------------------------------------------------------------------------------------------
// Limits.

#[test]
fn depth_limits() {
    let nested = |n: usize| format!("SELECT x FROM m WHERE {}a{}", "(".repeat(n), ")".repeat(n));
    assert!(parse_query(&nested(EXPR_DEPTH_MAX)).is_ok());
    assert_eq!(
        err(&nested(EXPR_DEPTH_MAX + 1)),
        format!(
            "expression nested too deeply (more than {EXPR_DEPTH_MAX} levels) at line 1, char {}",
            23 + EXPR_DEPTH_MAX
        )
    );
    let calls = |n: usize| format!("SELECT {}x{} FROM m", "f(".repeat(n), ")".repeat(n));
    assert!(parse_query(&calls(EXPR_DEPTH_MAX - 1)).is_ok());
    assert!(err(&calls(EXPR_DEPTH_MAX + 1)).starts_with("expression nested too deeply"));
    let negs = |n: usize| format!("SELECT {}x{} FROM m", "-(".repeat(n), ")".repeat(n));
    assert!(parse_query(&negs(EXPR_DEPTH_MAX / 2 - 1)).is_ok());
    assert!(err(&negs(EXPR_DEPTH_MAX)).starts_with("expression nested too deeply"));
    // Long flat chains are bounded too: they make deep trees.
    let chain = |n: usize| format!("SELECT x FROM m WHERE {}", vec!["h = 'a'"; n].join(" OR "));
    assert!(parse_query(&chain(EXPR_DEPTH_MAX - 2)).is_ok());
    assert!(err(&chain(EXPR_DEPTH_MAX)).starts_with("expression nested too deeply"));
    let sum = |n: usize| format!("SELECT {} FROM m", vec!["x"; n].join(" + "));
    assert!(parse_query(&sum(EXPR_DEPTH_MAX)).is_ok());
    assert!(err(&sum(EXPR_DEPTH_MAX + 1)).starts_with("expression nested too deeply"));
    assert!(err(&sum(100_000)).starts_with("expression nested too deeply"));
    // Subqueries.
    let sub = |n: usize| format!("SELECT x FROM {}m{}", "(SELECT x FROM ".repeat(n), ")".repeat(n));
    assert!(parse_query(&sub(SUBQUERY_DEPTH_MAX)).is_ok());
    assert_eq!(
        err(&sub(SUBQUERY_DEPTH_MAX + 1)),
        format!(
            "subqueries nested too deeply (more than {SUBQUERY_DEPTH_MAX}) at line 1, char {}",
            15 + 15 * SUBQUERY_DEPTH_MAX
        )
    );
    // Size.
    let big = format!("SELECT x FROM m WHERE x = '{}'", "a".repeat(QUERY_BYTES_MAX));
    assert!(err(&big).starts_with("query too large"));
}

/// The deepest inputs allowed parse, print, compare and drop on a 2 MiB stack (a tokio worker's,
/// and the test harness's), even unoptimized.
#[test]
fn deepest_inputs_fit_a_small_stack() {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let worst = [
                format!("SELECT x FROM m WHERE {}a{}", "(".repeat(EXPR_DEPTH_MAX), ")".repeat(EXPR_DEPTH_MAX)),
                format!(
                    "SELECT x FROM m WHERE {}a{}",
                    "(a OR (b AND (c = d + (e * ".repeat(EXPR_DEPTH_MAX / 8),
                    "))))".repeat(EXPR_DEPTH_MAX / 8)
                ),
                format!("SELECT {}x{} FROM m", "f(".repeat(EXPR_DEPTH_MAX - 1), ")".repeat(EXPR_DEPTH_MAX - 1)),
                format!("SELECT {}x{} FROM m", "-(".repeat(EXPR_DEPTH_MAX / 2 - 1), ")".repeat(EXPR_DEPTH_MAX / 2 - 1)),
                format!("SELECT {} FROM m", vec!["x"; EXPR_DEPTH_MAX].join(" - ")),
                format!("SELECT {}x{} FROM m", "x + (".repeat(EXPR_DEPTH_MAX - 1), ")".repeat(EXPR_DEPTH_MAX - 1)),
                format!(
                    "SELECT {}x{} FROM m",
                    "x + f(".repeat(EXPR_DEPTH_MAX / 2 - 1),
                    ")".repeat(EXPR_DEPTH_MAX / 2 - 1)
                ),
                format!(
                    "SELECT x FROM {}m WHERE {}a{}{}",
                    "(SELECT x FROM ".repeat(SUBQUERY_DEPTH_MAX),
                    "(".repeat(EXPR_DEPTH_MAX),
                    ")".repeat(EXPR_DEPTH_MAX),
                    ")".repeat(SUBQUERY_DEPTH_MAX)
                ),
            ];
            for q in &worst {
                roundtrip(q);
            }
        })
        .unwrap()
        .join()
        .unwrap();
}

// ---------------------------------------------------------------------------------------------
// Round trips and robustness.

#[test]
fn roundtrip_assorted() {
    for q in [
        "SELECT * FROM cpu",
        "SELECT *::field, host::tag FROM cpu",
        "SELECT mean(\"value\") AS \"mean\" FROM \"telegraf\".\"autogen\".\"cpu\" WHERE (\"host\" =~ /^(a|b)$/) AND time >= now() - 6h GROUP BY time(10s), \"host\" fill(null)",
        "SELECT count(DISTINCT x), percentile(y, 99.9), top(z, host, 3) FROM m",
        "SELECT derivative(mean(x), 1s) / 2 * -1 FROM m GROUP BY time(1m, now())",
        "SELECT x + y * z - (a - b) % 3 FROM m WHERE NOT1 = true OR f = false",
        "SELECT x FROM m WHERE a & 1 = 0 AND b | 2 ^ 3 > 1",
        "SELECT x FROM m WHERE time >= '2016-01-01 00:00:00' AND time < '2016-01-02'",
        "SELECT x FROM m WHERE time > 1451606400000000000 - 1h",
        "SELECT x FROM m WHERE s = 'it\\'s \\\\ \\n'",
        "SELECT \"a\\\"b\" FROM \"c\\\\d\"",
        "SELECT x FROM m WHERE v = -9223372036854775808 OR v = 18446744073709551615",
        "SELECT x FROM m WHERE v = -0.0 OR v = 0.1 + 0.2",
        "SELECT x FROM m WHERE $p = $\"q r\"",
        "SELECT \"time\", \"fill\", tz FROM tz tz('UTC')",
        "SELECT x FROM fill GROUP BY fill fill(0)",
        "SELECT x INTO db.rp.out FROM m",
        "SHOW TAG VALUES FROM \"my m\" WITH KEY IN (\"a b\", c) WHERE \"d e\" = 'f'",
    ] {
        roundtrip(q);
    }
}

/// A small deterministic PRNG (xorshift64*), so the "fuzz" tests are reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const VOCABULARY: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "GROUP",
    "BY",
    "time",
    "(",
    ")",
    "1h",
    "-15m",
    "-",
    "+",
    "*",
    "/",
    "%",
    "&",
    "|",
    "^",
    "/a\\/b/",
    "/x/",
    "'str'",
    "'it\\'s'",
    "\"q i\"",
    "\"\"",
    "x",
    "y",
    "mean",
    "count",
    ",",
    ";",
    "=~",
    "!~",
    "=",
    "!=",
    "<>",
    "<",
    "<=",
    ">",
    ">=",
    "AND",
    "OR",
    "1",
    "0",
    "1.5",
    ".5",
    "1.",
    "9223372036854775808",
    "fill",
    "none",
    "null",
    "linear",
    "tz",
    "'UTC'",
    "LIMIT",
    "OFFSET",
    "SLIMIT",
    "SOFFSET",
    "SHOW",
    "TAG",
    "KEY",
    "KEYS",
    "VALUES",
    "WITH",
    "IN",
    "DISTINCT",
    "now",
    "now()",
    "::",
    ":",
    "field",
    "tag",
    "float",
    ".",
    "..",
    "-- c\n",
    "/* c */",
    "$p",
    "INTO",
    ":MEASUREMENT",
    "ORDER",
    "ASC",
    "DESC",
    "EXPLAIN",
    "ANALYZE",
    "DROP",
    "SERIES",
    "DELETE",
    "CREATE",
    "DATABASE",
    "DATABASES",
    "DURATION",
    "INF",
    "REPLICATION",
    "SHARD",
    "NAME",
    "MEASUREMENTS",
    "MEASUREMENT",
    "CARDINALITY",
    "EXACT",
    "FIELD",
    "ON",
    "RETENTION",
    "POLICIES",
    "true",
    "false",
    "µ",
    "!",
    "'2016-01-01T00:00:00Z'",
    "db",
    "rp",
    "cpu",
    "AS",
    "\n",
    "\\",
    "'",
    "\"",
    "$",
    "é",
];

const SEEDS: &[&str] = &[
    "SELECT max(usage_user) from cpu where (hostname = 'host_1') and time >= '2016-01-01T05:25:39Z' and time < '2016-01-01T06:25:39Z' group by time(1m)",
    "SELECT * from cpu group by \"hostname\" order by time desc limit 1",
    "SELECT mean(x) AS m, -y, count(DISTINCT z) INTO db.rp.:MEASUREMENT FROM db..m, /re/, (SELECT a FROM b) WHERE h =~ /a\\/b/ AND v > -1.5 OR t < now() - 1h GROUP BY time(1h, -15m), host, * fill(-1) ORDER BY time DESC LIMIT 1 OFFSET 2 SLIMIT 3 SOFFSET 4 tz('UTC')",
    "SHOW TAG VALUES ON db FROM cpu WITH KEY IN (a, b) WHERE x = 'y' LIMIT 1",
    "SHOW MEASUREMENTS WITH MEASUREMENT =~ /c/ WHERE a = 'b'; SHOW DATABASES; DROP SERIES FROM m WHERE a = 'b'",
    "CREATE DATABASE d WITH DURATION 1d REPLICATION 1 SHARD DURATION 1h NAME r; DELETE FROM m WHERE time < 0",
    "SHOW SERIES EXACT CARDINALITY ON db FROM cpu GROUP BY a; EXPLAIN ANALYZE SELECT x::float, *::tag FROM m",
];

#[test]
fn random_token_soup_never_panics_and_roundtrips() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..30_000 {
        let n = 1 + rng.below(24);
        let mut q = String::new();
        for _ in 0..n {
            q.push_str(VOCABULARY[rng.below(VOCABULARY.len())]);
            if rng.below(3) != 0 {
                q.push(' ');
            }
        }
        roundtrip_if_valid(&q);
        let mut valid = String::from(["SELECT ", "SELECT x FROM m WHERE ", "SHOW "][rng.below(3)]);
        valid.push_str(&q);
        roundtrip_if_valid(&valid);
    }
}

#[test]
fn mutated_queries_never_panic_and_roundtrip() {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    for _ in 0..30_000 {
        let mut q: Vec<char> = SEEDS[rng.below(SEEDS.len())].chars().collect();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(q.len() + 1);
            match rng.below(4) {
                0 if at < q.len() => {
                    q.remove(at);
                }
                1 => {
                    let word = VOCABULARY[rng.below(VOCABULARY.len())];
                    for (i, c) in word.chars().enumerate() {
                        q.insert(at + i, c);
                    }
                }
                2 if at < q.len() => {
                    let end = (at + 1 + rng.below(12)).min(q.len());
                    q.drain(at..end);
                }
                _ => {
                    let c = b"()'\"/\\-*.:;=~!<>$ ,0aZ_"[rng.below(23)] as char;
                    q.insert(at, c);
                }
            }
        }
        let q: String = q.into_iter().collect();
        roundtrip_if_valid(&q);
    }
}

#[test]
fn arbitrary_bytes_never_panic() {
    let mut rng = Rng(42);
    let alphabet: Vec<char> = "SELECTFROMWHEREselect()'\"/\\*-+.:;=~!<>$ ,09azAZ_\n\tµé\u{0}\u{7f}".chars().collect();
    for _ in 0..20_000 {
        let q: String = (0..rng.below(40)).map(|_| alphabet[rng.below(alphabet.len())]).collect();
        roundtrip_if_valid(&q);
    }
}
