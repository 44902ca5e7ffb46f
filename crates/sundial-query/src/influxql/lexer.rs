//! The InfluxQL lexer: turns source text into tokens on demand.
//!
//! Regular expressions `/.../` cannot be told from division by looking at characters, so the lexer
//! never produces them on its own: the parser calls [`Lexer::scan_regex`] at the places where the
//! grammar allows a regex (as InfluxDB's parser asks its scanner), and [`Lexer::next_token`]
//! everywhere else.

use std::fmt;

use super::ParseError;

macro_rules! keywords {
    ($($kw:ident = $text:literal,)*) => {
        /// A reserved word. Bare identifiers equal to one of these, ignoring ASCII case, are keywords;
        /// quoted identifiers never are.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum Keyword { $($kw,)* }

        impl Keyword {
            /// The keyword in upper case, as InfluxDB names it in errors.
            pub(crate) fn as_str(self) -> &'static str {
                match self { $(Keyword::$kw => $text,)* }
            }

            fn lookup_upper(upper: &str) -> Option<Keyword> {
                match upper { $($text => Some(Keyword::$kw),)* _ => None }
            }
        }
    };
}

// InfluxDB 1.x's reserved words (influxql token.go), plus AND, OR, TRUE and FALSE.
keywords! {
    All = "ALL", Alter = "ALTER", Analyze = "ANALYZE", And = "AND", Any = "ANY", As = "AS", Asc = "ASC",
    Begin = "BEGIN", By = "BY", Cardinality = "CARDINALITY", Create = "CREATE", Continuous = "CONTINUOUS",
    Database = "DATABASE", Databases = "DATABASES", Default = "DEFAULT", Delete = "DELETE", Desc = "DESC",
    Destinations = "DESTINATIONS", Diagnostics = "DIAGNOSTICS", Distinct = "DISTINCT", Drop = "DROP",
    Duration = "DURATION", End = "END", Every = "EVERY", Exact = "EXACT", Explain = "EXPLAIN",
    False = "FALSE", Field = "FIELD", For = "FOR", From = "FROM", Future = "FUTURE", Grant = "GRANT",
    Grants = "GRANTS", Group = "GROUP", Groups = "GROUPS", In = "IN", Inf = "INF", Insert = "INSERT",
    Into = "INTO", Key = "KEY", Keys = "KEYS", Kill = "KILL", Limit = "LIMIT", Measurement = "MEASUREMENT",
    Measurements = "MEASUREMENTS", Name = "NAME", Offset = "OFFSET", On = "ON", Or = "OR", Order = "ORDER",
    Password = "PASSWORD", Past = "PAST", Policy = "POLICY", Policies = "POLICIES", Privileges = "PRIVILEGES",
    Queries = "QUERIES", Query = "QUERY", Read = "READ", Replication = "REPLICATION", Resample = "RESAMPLE",
    Retention = "RETENTION", Revoke = "REVOKE", Select = "SELECT", Series = "SERIES", Set = "SET",
    Show = "SHOW", Shard = "SHARD", Shards = "SHARDS", Slimit = "SLIMIT", Soffset = "SOFFSET",
    Stats = "STATS", Subscription = "SUBSCRIPTION", Subscriptions = "SUBSCRIPTIONS", Tag = "TAG", To = "TO",
    True = "TRUE", User = "USER", Users = "USERS", Values = "VALUES", Verbose = "VERBOSE", Where = "WHERE",
    With = "WITH", Write = "WRITE",
}

/// The longest keyword, in bytes ("SUBSCRIPTIONS").
const KEYWORD_LEN_MAX: usize = 13;

impl Keyword {
    pub(crate) fn lookup(ident: &str) -> Option<Keyword> {
        if ident.len() > KEYWORD_LEN_MAX || !ident.is_ascii() {
            return None;
        }
        let mut buf = [0u8; KEYWORD_LEN_MAX];
        let upper = &mut buf[..ident.len()];
        upper.copy_from_slice(ident.as_bytes());
        upper.make_ascii_uppercase();
        Keyword::lookup_upper(std::str::from_utf8(upper).ok()?)
    }
}

/// True if `ident` is a reserved word of InfluxQL (ignoring ASCII case), so that it must be
/// double-quoted to be used as an identifier.
pub fn is_keyword(ident: &str) -> bool {
    Keyword::lookup(ident).is_some()
}

/// What a token is. Literal numbers keep their text in the source (`Token::start..Token::end`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    /// A bare or double-quoted identifier (unescaped).
    Ident(String),
    /// `$name` or `$"name"`.
    BoundParam(String),
    Keyword(Keyword),
    /// Digits only.
    Integer,
    /// Digits with a decimal point.
    Number,
    /// Digits followed by letters (`10s`, `1h30m`); not yet validated.
    Duration,
    /// A single-quoted string (unescaped).
    Str(String),
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    BitAnd,
    BitOr,
    BitXor,
    Eq,
    /// `!=` or `<>`.
    Neq,
    EqRegex,
    NeqRegex,
    Lt,
    Lte,
    Gt,
    Gte,
    LParen,
    RParen,
    Comma,
    Colon,
    DoubleColon,
    Semicolon,
    Dot,
    /// A character that starts no token.
    Illegal(char),
    Eof,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub kind: Tok,
    /// Byte offsets of the token in the source.
    pub start: usize,
    pub end: usize,
}

impl Token {
    pub(crate) fn is_kw(&self, kw: Keyword) -> bool {
        self.kind == Tok::Keyword(kw)
    }

    /// The token as InfluxDB names it after "found": the literal text of identifiers, strings and
    /// numbers, the upper-case keyword, the operator, or `EOF`.
    pub(crate) fn describe<'a>(&'a self, src: &'a str) -> Describe<'a> {
        Describe { token: self, src }
    }
}

pub(crate) struct Describe<'a> {
    token: &'a Token,
    src: &'a str,
}

impl fmt::Display for Describe<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match &self.token.kind {
            Tok::Ident(s) | Tok::Str(s) => return f.write_str(s),
            Tok::BoundParam(s) => return write!(f, "${s}"),
            Tok::Keyword(kw) => kw.as_str(),
            Tok::Integer | Tok::Number | Tok::Duration => {
                return f.write_str(self.src.get(self.token.start..self.token.end).unwrap_or("?"));
            }
            Tok::Illegal(c) => return write!(f, "{c}"),
            Tok::Add => "+",
            Tok::Sub => "-",
            Tok::Mul => "*",
            Tok::Div => "/",
            Tok::Mod => "%",
            Tok::BitAnd => "&",
            Tok::BitOr => "|",
            Tok::BitXor => "^",
            Tok::Eq => "=",
            Tok::Neq => "!=",
            Tok::EqRegex => "=~",
            Tok::NeqRegex => "!~",
            Tok::Lt => "<",
            Tok::Lte => "<=",
            Tok::Gt => ">",
            Tok::Gte => ">=",
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::Comma => ",",
            Tok::Colon => ":",
            Tok::DoubleColon => "::",
            Tok::Semicolon => ";",
            Tok::Dot => ".",
            Tok::Eof => "EOF",
        };
        f.write_str(s)
    }
}

fn is_ident_first(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The micro sign (U+00B5, which InfluxDB accepts) and the Greek small mu (U+03BC, its look-alike).
fn is_micro(c: char) -> bool {
    c == 'µ' || c == 'μ'
}

fn is_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

pub(crate) struct Lexer<'a> {
    src: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(src: &'a str) -> Lexer<'a> {
        Lexer { src, pos: 0 }
    }

    /// Moves back to `pos` (the start of a token already seen), to read it again differently.
    pub(crate) fn rewind(&mut self, pos: usize) {
        debug_assert!(pos <= self.pos);
        self.pos = pos;
    }

    fn peek_char(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn peek_char2(&self) -> Option<char> {
        let mut it = self.src[self.pos..].chars();
        it.next();
        it.next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek_char()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn err(&self, pos: usize, message: impl Into<String>) -> ParseError {
        ParseError::new(self.src, pos, message)
    }

    /// Skips whitespace, `-- line` comments and `/* block */` comments.
    fn skip_trivia(&mut self) -> Result<(), ParseError> {
        loop {
            match self.peek_char() {
                Some(c) if is_whitespace(c) => {
                    self.pos += 1;
                }
                Some('-') if self.peek_char2() == Some('-') => match self.src[self.pos..].find('\n') {
                    Some(i) => self.pos += i + 1,
                    None => self.pos = self.src.len(),
                },
                Some('/') if self.peek_char2() == Some('*') => match self.src[self.pos + 2..].find("*/") {
                    Some(i) => self.pos += 2 + i + 2,
                    None => return Err(self.err(self.pos, "unterminated comment")),
                },
                _ => return Ok(()),
            }
        }
    }

    /// The next token, skipping whitespace and comments. At the end it returns [`Tok::Eof`] again
    /// and again.
    pub(crate) fn next_token(&mut self) -> Result<Token, ParseError> {
        self.skip_trivia()?;
        let start = self.pos;
        let Some(c) = self.bump() else {
            return Ok(Token { kind: Tok::Eof, start, end: start });
        };
        let kind = match c {
            c if is_ident_first(c) => {
                self.pos = start;
                let ident = self.scan_bare_ident();
                match Keyword::lookup(ident) {
                    Some(kw) => Tok::Keyword(kw),
                    None => Tok::Ident(ident.to_string()),
                }
            }
            '0'..='9' => {
                self.pos = start;
                self.scan_number()
            }
            '.' if self.peek_char().is_some_and(|c| c.is_ascii_digit()) => {
                self.pos = start;
                self.scan_number()
            }
            '"' => {
                self.pos = start;
                Tok::Ident(self.scan_quoted('"')?)
            }
            '\'' => {
                self.pos = start;
                Tok::Str(self.scan_quoted('\'')?)
            }
            '$' => {
                let name = match self.peek_char() {
                    Some('"') => self.scan_quoted('"')?,
                    _ => self.scan_bare_ident().to_string(),
                };
                if name.is_empty() {
                    return Err(self.err(start, "empty bound parameter"));
                }
                Tok::BoundParam(name)
            }
            c => self.scan_operator(c),
        };
        Ok(Token { kind, start, end: self.pos })
    }

    /// An operator or punctuation starting with `c` (already read).
    fn scan_operator(&mut self, c: char) -> Tok {
        match c {
            '.' => Tok::Dot,
            '+' => Tok::Add,
            '-' => Tok::Sub,
            '*' => Tok::Mul,
            '/' => Tok::Div,
            '%' => Tok::Mod,
            '&' => Tok::BitAnd,
            '|' => Tok::BitOr,
            '^' => Tok::BitXor,
            '=' => self.then('~', Tok::EqRegex, Tok::Eq),
            '!' => match self.peek_char() {
                Some('=') => {
                    self.pos += 1;
                    Tok::Neq
                }
                Some('~') => {
                    self.pos += 1;
                    Tok::NeqRegex
                }
                _ => Tok::Illegal('!'),
            },
            '>' => self.then('=', Tok::Gte, Tok::Gt),
            '<' => match self.peek_char() {
                Some('=') => {
                    self.pos += 1;
                    Tok::Lte
                }
                Some('>') => {
                    self.pos += 1;
                    Tok::Neq
                }
                _ => Tok::Lt,
            },
            '(' => Tok::LParen,
            ')' => Tok::RParen,
            ',' => Tok::Comma,
            ';' => Tok::Semicolon,
            ':' => self.then(':', Tok::DoubleColon, Tok::Colon),
            c => Tok::Illegal(c),
        }
    }

    fn then(&mut self, next: char, yes: Tok, no: Tok) -> Tok {
        if self.peek_char() == Some(next) {
            self.pos += next.len_utf8();
            yes
        } else {
            no
        }
    }

    fn scan_bare_ident(&mut self) -> &'a str {
        let start = self.pos;
        let len = self.src[start..].find(|c: char| !is_ident_char(c)).unwrap_or(self.src.len() - start);
        self.pos += len;
        &self.src[start..start + len]
    }

    fn scan_digits(&mut self) {
        while self.peek_char().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
    }

    /// `123` (integer), `1.5`, `.5` or `1.` (number), `10s`, `1h30m` (duration).
    fn scan_number(&mut self) -> Tok {
        self.scan_digits();
        if self.peek_char() == Some('.') {
            self.pos += 1;
            self.scan_digits();
            return Tok::Number;
        }
        if self.peek_char().is_some_and(|c| c.is_ascii_alphabetic() || is_micro(c)) {
            while self.peek_char().is_some_and(|c| c.is_ascii_alphanumeric() || is_micro(c)) {
                self.bump();
            }
            return Tok::Duration;
        }
        Tok::Integer
    }

    /// A string or identifier between `quote`s, with the escapes `\n`, `\\`, `\'` and `\"`.
    fn scan_quoted(&mut self, quote: char) -> Result<String, ParseError> {
        let start = self.pos;
        self.pos += 1;
        let mut out = String::new();
        loop {
            let at = self.pos;
            match self.bump() {
                None | Some('\n') => {
                    let what = if quote == '"' { "unterminated quoted identifier" } else { "unterminated string" };
                    return Err(self.err(start, what));
                }
                Some(c) if c == quote => return Ok(out),
                Some('\\') => match self.bump() {
                    Some('n') => out.push('\n'),
                    Some(c @ ('\\' | '\'' | '"')) => out.push(c),
                    Some(c) if c != '\n' => return Err(self.err(at, format!("bad escape: \\{c}"))),
                    _ => {
                        let what = if quote == '"' { "unterminated quoted identifier" } else { "unterminated string" };
                        return Err(self.err(start, what));
                    }
                },
                Some(c) => out.push(c),
            }
        }
    }

    /// If the next token (after whitespace and comments) starts with `/`, reads it as a regular
    /// expression `/.../` (where `\/` stands for `/` and any other `\x` is kept as is) and returns its
    /// pattern and start offset; otherwise reads nothing and returns `None`.
    pub(crate) fn scan_regex(&mut self) -> Result<Option<(String, usize)>, ParseError> {
        self.skip_trivia()?;
        let start = self.pos;
        if self.peek_char() != Some('/') {
            return Ok(None);
        }
        self.pos += 1;
        let mut out = String::new();
        loop {
            match self.bump() {
                None => return Err(self.err(start, "unterminated regex")),
                Some('\n') => return Err(self.err(start, "bad regex: it contains a new line")),
                Some('/') => return Ok(Some((out, start))),
                Some('\\') => match self.peek_char() {
                    Some('/') => {
                        self.pos += 1;
                        out.push('/');
                    }
                    // Kept, and the next character is read on its own (so `\\/` is `\` then `\/`).
                    _ => out.push('\\'),
                },
                Some(c) => out.push(c),
            }
        }
    }
}

const NS_PER_US: i64 = 1_000;
const NS_PER_MS: i64 = 1_000_000;
const NS_PER_S: i64 = 1_000_000_000;
const NS_PER_M: i64 = 60 * NS_PER_S;
const NS_PER_H: i64 = 60 * NS_PER_M;
const NS_PER_D: i64 = 24 * NS_PER_H;
const NS_PER_W: i64 = 7 * NS_PER_D;

/// Parses an InfluxQL duration such as `10s`, `1h30m`, `100ms`, `5u` (or `5µ`), `10ns`, `1d`, `2w`,
/// optionally negative (`-15m`), to nanoseconds. `None` if malformed or out of `i64` range.
pub fn parse_duration(s: &str) -> Option<i64> {
    let (negative, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    if rest.is_empty() {
        return None;
    }
    let mut total: i64 = 0;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        if digits == 0 || digits == rest.len() {
            return None;
        }
        let n: i64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let (unit, len) = if let Some(r) = rest.strip_prefix("ns") {
            (1, rest.len() - r.len())
        } else if let Some(r) = rest.strip_prefix("ms") {
            (NS_PER_MS, rest.len() - r.len())
        } else {
            let c = rest.chars().next()?;
            let unit = match c {
                'u' | 'µ' | 'μ' => NS_PER_US,
                's' => NS_PER_S,
                'm' => NS_PER_M,
                'h' => NS_PER_H,
                'd' => NS_PER_D,
                'w' => NS_PER_W,
                _ => return None,
            };
            (unit, c.len_utf8())
        };
        total = total.checked_add(n.checked_mul(unit)?)?;
        rest = &rest[len..];
    }
    Some(if negative { -total } else { total })
}

/// Formats nanoseconds as an InfluxQL duration in the largest unit that divides it exactly
/// (`3600000000000` → `1h`, `90s` stays `90s`, `0` → `0s`), the inverse of [`parse_duration`].
pub fn format_duration(ns: i64) -> String {
    const UNITS: [(i64, &str); 7] = [
        (NS_PER_W, "w"),
        (NS_PER_D, "d"),
        (NS_PER_H, "h"),
        (NS_PER_M, "m"),
        (NS_PER_S, "s"),
        (NS_PER_MS, "ms"),
        (NS_PER_US, "u"),
    ];
    if ns == 0 {
        return "0s".to_string();
    }
    for (unit, name) in UNITS {
        if ns % unit == 0 {
            return format!("{}{name}", ns / unit);
        }
    }
    format!("{ns}ns")
}
