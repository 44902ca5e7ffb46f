//! Micro benchmark: parses 200k TSBS cpu-only lines held in memory and prints lines/s and MB/s, three
//! ways: the iterator (vectors per line), `next_into` over 10,000-line bodies as `POST /write` does,
//! and the same sharing repeated series keys (`share_repeated_keys`).
//!
//! Run: `cargo run --release -p sundial-lp --example lp_bench [lines] [rounds] [hosts] [way]` (hosts:
//! 1,000 by default; TSBS writes each timestamp's hosts in turn, so a body repeats a key lines/hosts
//! times; way: 1, 2 or 3 runs only that one of the three, for a profile of it).

use std::borrow::Cow;
use std::hint::black_box;
use std::time::{Duration, Instant};

use sundial_lp::{FieldValue, Line, parse_lines, write_line};

const FIELDS: [&str; 10] = [
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

/// A small xorshift generator: deterministic data without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// One TSBS `cpu` line as TSBS's generator writes it (1000 hosts, 10 s apart).
fn tsbs_line(i: u64, hosts: u64, rng: &mut Rng) -> Line<'static> {
    let host = i % hosts;
    let owned = |s: String| Cow::Owned(s);
    let tag = |k: &'static str, v: String| (Cow::Borrowed(k), owned(v));
    let regions = ["eu-central-1", "us-west-1", "ap-northeast-1", "sa-east-1"];
    let region = regions[(host % 4) as usize];
    let tags = vec![
        tag("hostname", format!("host_{host}")),
        tag("region", region.to_owned()),
        tag(
            "datacenter",
            format!("{region}{}", ["a", "b", "c"][(host % 3) as usize]),
        ),
        tag("rack", (host % 100).to_string()),
        tag(
            "os",
            ["Ubuntu15.10", "Ubuntu16.04LTS", "Ubuntu16.10"][(host % 3) as usize].to_owned(),
        ),
        tag("arch", ["x86", "x64"][(host % 2) as usize].to_owned()),
        tag(
            "team",
            ["SF", "NYC", "LON", "CHI"][(host % 4) as usize].to_owned(),
        ),
        tag("service", (host % 20).to_string()),
        tag("service_version", (host % 2).to_string()),
        tag(
            "service_environment",
            ["test", "staging", "production"][(host % 3) as usize].to_owned(),
        ),
    ];
    let fields = FIELDS
        .iter()
        .map(|&f| (Cow::Borrowed(f), FieldValue::Integer(rng.below(100) as i64)))
        .collect();
    let timestamp = 1_451_606_400_000_000_000 + (i / hosts) as i64 * 10_000_000_000;
    Line {
        measurement: Cow::Borrowed("cpu"),
        tags,
        fields,
        timestamp: Some(timestamp),
        line_number: 0,
    }
}

fn body(lines: u64, hosts: u64) -> String {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut out = String::with_capacity(lines as usize * 400);
    for i in 0..lines {
        write_line(&mut out, &tsbs_line(i, hosts, &mut rng));
        out.push('\n');
    }
    out
}

/// Lines per `POST /write` body (TSBS's default batch).
const BODY_LINES: usize = 10_000;

/// The body cut into `POST /write` bodies of [`BODY_LINES`] lines.
fn bodies(body: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let mut cut = rest.len();
        let mut seen = 0;
        for (i, b) in rest.iter().enumerate() {
            if *b == b'\n' {
                seen += 1;
                if seen == BODY_LINES {
                    cut = i + 1;
                    break;
                }
            }
        }
        let (part, tail) = rest.split_at(cut);
        out.push(part);
        rest = tail;
    }
    out
}

/// Parses each body through `next_into`, sharing repeated keys or not; returns a checksum.
fn parse_bodies(bodies: &[&[u8]], share: bool) -> (usize, i64) {
    let (mut lines, mut sum) = (0, 0i64);
    // One pair of vectors for every body, cleared between them: the parser's work, not the page
    // faults of fresh vectors (which depend on the allocator's state more than on the parser).
    let (mut tags, mut fields) = (Vec::with_capacity(BODY_LINES * 10), Vec::with_capacity(BODY_LINES * 10));
    for part in bodies {
        tags.clear();
        fields.clear();
        let mut parser = parse_lines(part);
        if share {
            parser = parser.share_repeated_keys(BODY_LINES);
        }
        while let Some(head) = parser.next_into(&mut tags, &mut fields) {
            let head = head.expect("generated lines are valid");
            lines += 1;
            sum = sum.wrapping_add(head.tags.len() as i64);
            for (_, v) in &fields[head.fields] {
                if let FieldValue::Integer(v) = v {
                    sum = sum.wrapping_add(*v);
                }
            }
        }
    }
    (lines, sum)
}

/// Parses the whole body once; returns a checksum so the work cannot be optimised away.
fn parse_all(body: &[u8]) -> (usize, i64) {
    let (mut lines, mut sum) = (0, 0i64);
    for line in parse_lines(body) {
        let line = line.expect("generated lines are valid");
        lines += 1;
        sum = sum.wrapping_add(line.tags.len() as i64);
        for (_, v) in &line.fields {
            if let FieldValue::Integer(v) = v {
                sum = sum.wrapping_add(*v);
            }
        }
    }
    (lines, sum)
}

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<u64>().expect("numeric argument"));
    let lines = args.next().unwrap_or(200_000);
    let rounds = args.next().unwrap_or(10);
    let hosts = args.next().unwrap_or(1000).max(1);
    let only = args.next().unwrap_or(0) as usize;
    let body = body(lines, hosts);
    println!(
        "{lines} lines of {hosts} hosts, {:.1} MB, {:.0} bytes/line",
        body.len() as f64 / 1e6,
        body.len() as f64 / lines as f64
    );
    let parts = bodies(body.as_bytes());
    type Parse<'f> = &'f dyn Fn(&[u8]) -> (usize, i64);
    let ways: [(&str, Parse); 3] = [
        ("iterator", &parse_all),
        ("next_into", &|_| parse_bodies(&parts, false)),
        ("next_into, shared keys", &|_| parse_bodies(&parts, true)),
    ];
    for (i, (name, parse)) in ways.into_iter().enumerate() {
        if only != 0 && only != i + 1 {
            continue;
        }
        black_box(parse(body.as_bytes())); // warm-up
        let mut best = Duration::MAX;
        let mut total = Duration::ZERO;
        for _ in 0..rounds {
            let start = Instant::now();
            let (parsed, sum) = parse(black_box(body.as_bytes()));
            let took = start.elapsed();
            assert_eq!(parsed as u64, lines);
            black_box(sum);
            best = best.min(took);
            total += took;
        }
        let report = |label: &str, d: Duration| {
            let secs = d.as_secs_f64();
            println!(
                "{name} {label}: {:.2} M lines/s, {:.0} MB/s ({:.0} ns/line)",
                lines as f64 / secs / 1e6,
                body.len() as f64 / secs / 1e6,
                secs * 1e9 / lines as f64
            );
        };
        report("best", best);
        report("mean", total / rounds as u32);
    }
}
