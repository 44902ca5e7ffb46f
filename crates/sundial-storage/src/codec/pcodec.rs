//! pco (pcodec) for numeric runs: near-entropy compression of integers and floats with fast decode.
//!
//! We use pco's "wrapped" API rather than its standalone files: the block header already stores the
//! count, so the standalone magic, count hint and terminator (about 10 bytes) would be waste, and the
//! wrapped API lets us inspect the chunk metadata before pco allocates from it (see [`decompress`]).
//!
//! The payload starts with the count of numbers. It repeats what the block header implies, but pco
//! cannot tell a page of 1000 numbers read as 999 from a valid page of 999, so without it a wrong row
//! count (a bookkeeping bug in the segment writer or reader) would decode to silently wrong values.
//! It costs two bytes per block.
//!
//! A block's field column of more than [`PAGE_ROWS`] numbers is written *paged* ([`Pages::Paged`]):
//! one chunk (pco's bins and delta choice, shared) and pages of [`PAGE_ROWS`] numbers, each prefixed by
//! its byte length. A pco page is decodable on its own given the chunk metadata, so a read of a few rows
//! ([`decompress_pages`]) decodes only the pages holding them: an hour of a day-long block at 10 s
//! intervals is one or two pages of 2048 instead of all 8640 numbers. Each page repeats pco's page
//! header (its delta state and ANS states, about 13 bytes) plus the two-byte length: on the TSBS walk
//! 0.281 → 0.288 bytes/value for 8640-row blocks (pages of 1024: 0.294, 4096: 0.284).

use pco::data_types::Number;
use pco::errors::PcoError;
use pco::metadata::{ChunkMeta, DeltaEncoding};
use pco::wrapped::{ChunkDecompressor, FileCompressor, FileDecompressor};
use pco::{ChunkConfig, DeltaSpec, ModeSpec, PagingSpec};

use super::cursor::Cursor;
use super::numeric::Word;
use super::page_cache::{self, ChunkKey};
use super::{CodecError, Delta, Effort, Result};
use crate::encoding::put_uvarint;

/// pco's compression level, stated so that an upgrade cannot silently change it.
///
/// The level bounds a chunk's bins (2^level, fewer for small chunks) and so its ANS table, up to
/// 2^(level+2) entries, which the reader builds for every page it decodes: for a day's block of 8,640
/// numbers 1,024 at pco's default 8, 256 at 6. A read of an hour from a day's block decodes one page of
/// 2,048 numbers, and building the table was a fifth to a quarter of the CPU of TSBS's small rollups
/// at 8. Our chunks are at most a block
/// (8,640 rows at 10 s over a day): on TSBS's data the bins past 64 do not pay for their metadata,
/// and on the other shapes tried they save at most 0.6 %:
///
/// | bytes/value | level 4 | 6 | 8 |
/// |---|---:|---:|---:|
/// | TSBS walk (synthetic), 8,640 numbers, one page | 0.2933 | 0.2817 | 0.2825 |
/// | the same in pages of at most 2,048 | 0.3200 | 0.3191 | 0.3214 |
/// | TSBS scenario 1 (100 hosts × 4 days) through the server: segment files | 0.3164 | **0.3051** | 0.3063 |
/// | float walk rounded to 2 decimals, 8,640 in pages ≤ 2,048 | | 1.2326 | 1.2306 |
/// | Pareto-distributed integers (latencies), the same | | 0.5991 | 0.5956 |
///
/// (Gaussian noise, log-normal floats and counters differ by less still.) Writing searches fewer bins
/// at 6; the server's CPU while loading TSBS moved within the machine's spread (scenario 2: 69.2 s at
/// level 8, 68.4 and 65.2 s at 6).
const PCO_LEVEL: usize = 6;

/// pco's compression level for numbers written without delta because their neighbours are unrelated
/// ([`Delta::Off`]: a pack of one-row series, a dictionary's indexes in `catalog.log`). Why lower: a
/// pack's chunk of ~1,000 numbers from as many series spent most of its encoding choosing bins, and
/// such values (each series' own level) gain little from finer bins. A column chunk of 1,024 numbers
/// through the codec (`examples/pack_levels.rs`; the codec's column at level 3):
///
/// | numbers | level 6: µs/chunk, bytes/value | level 4 | level 3 | the codec (level 3) |
/// |---|---:|---:|---:|---:|
/// | uniform integers 0..=100 (TSBS's fields across hosts) | 38.1, 0.888 | 23.2, 0.889 | 14.2, 0.903 | 15.0, 0.894 |
/// | log-uniform integers 10³..10⁹ | 47.9, 3.094 | 28.3, 3.111 | 26.4, 3.122 | 26.6, 3.112 |
/// | uniform floats with two decimals (pco on the floats, then on ALP's integers) | 69.4, 1.809 | 57.4, 1.809 | 55.4, 1.836 | 89.7, 1.728 |
///
/// Encoding the packs was 8 % of the server's CPU loading TSBS's 10 M hosts at level 6, and at level 4
/// still 7 % (pco's histogram sort alone 2.3 %): level 3 halves that for TSBS's values at 1.7 % more
/// bytes in those packs (compaction copies them as they are).
const PCO_LEVEL_UNRELATED: usize = 3;

/// pco's compression level for [`Effort::Quick`]: a flush's rows of series that the partition's files
/// already hold, which compaction merges with those, decoding them and writing them again at
/// [`PCO_LEVEL`]. One bin: pco's bin search, most of its encoding time on a flush's small blocks, is
/// skipped, for bytes kept only until that merge. TSBS's 100,000 hosts (scenario 3) loaded with every
/// flush at level 0 against the levels above: 9 % less server CPU (two pairs, `committed.sh`).
const PCO_LEVEL_QUICK: usize = 0;

/// The config for one block of `n` numbers.
///
/// - Mode `Auto`: lets pco find a common multiplier (integers stored in units of 10, floats with two
///   decimals via FloatMult) when it saves bits; it costs only encode time.
/// - Delta `Auto`: pco tries consecutive delta orders and lookback and keeps the cheapest. On the TSBS
///   walk it picks order 1 (2412 bytes; order 2: 3050, none: 7187, lookback: 2420 and 40% slower to
///   decode), and on jittered timestamps order 1 as well, so a fixed order would gain nothing.
/// - Pages as the caller says: one holding all the numbers ([`compress`]: blocks are at most
///   `BLOCK_ROWS_MAX` rows, far below pco's 2¹⁸-per-page default) or pages of [`PAGE_ROWS`]
///   ([`Pages`]).
///
/// [`Delta::Off`] replaces the delta search by "no delta" for numbers the caller knows are unrelated to
/// their neighbours (see [`Delta`]), and compresses them at [`PCO_LEVEL_UNRELATED`].
fn config(pages: Vec<usize>, delta: Delta, effort: Effort) -> ChunkConfig {
    let (delta, level) = match delta {
        Delta::Auto => (DeltaSpec::Auto, PCO_LEVEL),
        Delta::Off => (DeltaSpec::NoOp, PCO_LEVEL_UNRELATED),
        Delta::Order(k) => (DeltaSpec::TryConsecutive(usize::from(k)), PCO_LEVEL),
    };
    let level = match effort {
        Effort::Full => level,
        Effort::Quick => PCO_LEVEL_QUICK,
    };
    ChunkConfig::default()
        .with_compression_level(level)
        .with_mode_spec(ModeSpec::Auto)
        .with_delta_spec(delta)
        .with_paging_spec(PagingSpec::Exact(pages))
        .with_enable_8_bit(false)
}

/// Numbers per page of a paged payload. A size in rows, not time: 2048 rows are 5.7 hours at 10 s
/// intervals, 34 minutes at 1 s. Smaller pages cost more bytes (see the module doc); larger ones decode
/// more than a short range needs.
pub(super) const PAGE_ROWS: usize = 2048;

/// The smallest page size a reader accepts: bounds the pages a payload may claim (at most
/// `CODEC_ROWS_MAX / PAGE_ROWS_MIN` length prefixes to walk) whatever a corrupt header says.
const PAGE_ROWS_MIN: usize = 256;

/// How [`compress`] lays out the numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Pages {
    /// A pco payload: one page of all the numbers.
    One,
    /// A paged pco payload: `uvarint count`, `uvarint page_rows` ([`PAGE_ROWS`]), pco's header and chunk
    /// metadata, then per page `uvarint len` and its `len` bytes.
    Paged,
}

/// Appends the pco payload of `nums` (non-empty) to `out`, in pages as `pages` says, and returns the
/// delta pco used as a [`Delta`] to ask for again: `Order(k)` for consecutive differences of order `k`
/// (0: none), `Auto` for another encoding. Returns `None`, leaving `out` as it was, if pco refuses (it
/// should not for our number types; the caller then stores the values plain).
pub(super) fn compress<T: Number>(nums: &[T], delta: Delta, pages: Pages, effort: Effort, out: &mut Vec<u8>) -> Option<Delta> {
    let start = out.len();
    let used = if nums.is_empty() { None } else { try_compress(nums, delta, pages, effort, out).ok() };
    if used.is_none() {
        out.truncate(start);
    }
    used
}

fn try_compress<T: Number>(nums: &[T], delta: Delta, pages: Pages, effort: Effort, out: &mut Vec<u8>) -> pco::errors::PcoResult<Delta> {
    put_uvarint(out, nums.len() as u64);
    let sizes = match pages {
        Pages::One => vec![nums.len()],
        Pages::Paged => {
            put_uvarint(out, PAGE_ROWS as u64);
            let mut sizes = vec![PAGE_ROWS; nums.len() / PAGE_ROWS];
            if !nums.len().is_multiple_of(PAGE_ROWS) {
                sizes.push(nums.len() % PAGE_ROWS);
            }
            sizes
        }
    };
    let n_pages = sizes.len();
    let fc = FileCompressor::default();
    fc.write_header(&mut *out)?;
    let mut cc = fc.chunk_compressor(nums, &config(sizes, delta, effort))?;
    let used = match cc.meta().delta_encoding {
        DeltaEncoding::NoOp => Delta::Order(0),
        DeltaEncoding::Consecutive { order, .. } => u8::try_from(order).map_or(Delta::Auto, Delta::Order),
        _ => Delta::Auto,
    };
    cc.write_meta(&mut *out)?;
    if pages == Pages::One {
        return cc.write_page(0, &mut *out).map(|_| used);
    }
    let mut page = Vec::new();
    for i in 0..n_pages {
        page.clear();
        cc.write_page(i, &mut page)?;
        put_uvarint(out, page.len() as u64);
        out.extend_from_slice(&page);
    }
    Ok(used)
}

/// pco decodes a page in batches of this many numbers; a read that stops inside a page must end on a
/// batch boundary (pco 1.x's `PageDecompressor::read`).
const PCO_BATCH: usize = 256;

/// Numbers `rows` (within `0..m`) of a paged payload of exactly `m` numbers that fills `buf`. Only the
/// pages holding them are decoded, and of the last one only up to the batch holding `rows.end`; a
/// page wholly inside `rows` decodes straight into the result. Every page's length is walked, so a
/// payload whose pages do not tile it is refused whatever is decoded; a page read to its end must end
/// exactly there.
///
/// With `cached` (the chunk's name and the read's budget of bytes to keep), a page kept in [`page_cache`]
/// is copied out instead of decoded, and while the budget lasts a page decoded is decoded whole and kept
/// (its bytes taken from the budget).
pub(super) fn decompress_pages<T: Word>(
    buf: &[u8],
    m: usize,
    rows: std::ops::Range<usize>,
    what: &'static str,
    mut cached: Option<(ChunkKey, &mut usize)>,
) -> Result<Vec<T>> {
    let err = |e: PcoError| CodecError::Pco { what, message: e.to_string() };
    let mut cur = Cursor::new(buf);
    read_count(&mut cur, m, what)?;
    let page_rows = cur.uvarint("pco page size")?;
    if page_rows < PAGE_ROWS_MIN as u64 || page_rows > crate::limits::CODEC_ROWS_MAX as u64 {
        return Err(CodecError::Corrupt { what: "pco page size" });
    }
    let page_rows = page_rows as usize;
    assert!(rows.start <= rows.end && rows.end <= m, "rows {rows:?} of {m} numbers asked for");
    let (mut cd, rest) = open_chunk::<T>(cur.rest(), m, what)?;
    let mut pages = Cursor::new(rest);
    let mut out: Vec<T> = Vec::with_capacity(rows.len());
    let mut scratch: Vec<T> = Vec::new();
    for p in 0..m.div_ceil(page_rows) {
        let len = pages.len(buf.len(), "pco page length")?;
        let page = pages.take(len, "pco page")?;
        let (start, k) = (p * page_rows, page_rows.min(m - p * page_rows));
        if rows.end <= start || start + k <= rows.start {
            continue;
        }
        // The numbers wanted of this page: `lo..hi` of its `k`.
        let (lo, hi) = (rows.start.max(start) - start, rows.end.min(start + k) - start);
        // Set when this page, not kept yet, is to be kept: decoded whole, while the read's budget lasts.
        let mut keep = None;
        if let Some((chunk, budget)) = &cached {
            let at = u32::try_from(p).expect("pages of a payload within CODEC_ROWS_MAX");
            match page_cache::get(*chunk, at) {
                // Kept at the length this payload gives its page: the same chunk, checksummed when read.
                Some(kept) if kept.len() == k => {
                    kept.unpack_into(lo..hi, &mut out);
                    continue;
                }
                Some(kept) => return Err(CodecError::LengthMismatch { what: "decoded page kept for the chunk", expected: k, actual: kept.len() }),
                None if **budget > 0 => keep = Some((*chunk, at)),
                // The read has kept its share: decoded as without the cache.
                None => {}
            }
        }
        let mut kept_now = |vals: &[T]| {
            if let (Some((chunk, at)), Some((_, budget))) = (keep, cached.as_mut()) {
                **budget = budget.saturating_sub(page_cache::put(chunk, at, vals));
            }
        };
        if lo == 0 && hi == k {
            let at = out.len();
            out.resize(at + k, T::default());
            read_page(&mut cd, page, &mut out[at..], what)?;
            kept_now(&out[at..]);
            continue;
        }
        // Up to the batch holding `hi` (or the page's end: all of a page to keep), then the wanted ones.
        let n_read = if keep.is_some() { k } else { hi.next_multiple_of(PCO_BATCH).min(k) };
        scratch.clear();
        scratch.resize(n_read, T::default());
        if n_read == k {
            read_page(&mut cd, page, &mut scratch, what)?;
            kept_now(&scratch);
        } else {
            let progress = cd.page_decompressor(page, k).map_err(err)?.read(&mut scratch).map_err(err)?;
            if progress.n_processed != n_read {
                return Err(CodecError::LengthMismatch { what, expected: n_read, actual: progress.n_processed });
            }
        }
        out.extend_from_slice(&scratch[lo..hi]);
    }
    pages.finish("pco pages")?;
    Ok(out)
}

/// Decodes a pco payload of exactly `m` numbers that fills `buf`.
pub(super) fn decompress<T: Number>(buf: &[u8], m: usize, what: &'static str) -> Result<Vec<T>> {
    let mut cur = Cursor::new(buf);
    read_count(&mut cur, m, what)?;
    let (mut cd, rest) = open_chunk::<T>(cur.rest(), m, what)?;
    let mut dst = vec![T::default(); m];
    read_page(&mut cd, rest, &mut dst, what)?;
    Ok(dst)
}

/// Reads a payload's `uvarint count`, which must be `m` (at least 1).
fn read_count(cur: &mut Cursor<'_>, m: usize, what: &'static str) -> Result<()> {
    let count = cur.uvarint(what)?;
    if count != m as u64 || m == 0 {
        return Err(CodecError::LengthMismatch { what, expected: m, actual: usize::try_from(count).unwrap_or(usize::MAX) });
    }
    Ok(())
}

/// pco's header and chunk metadata at the start of `buf`, for `m` numbers: their decompressor and the
/// bytes after them. The two fields pco allocates from before reading their data are checked first
/// ([`check_dict_len`], [`check_lookback`]).
fn open_chunk<'a, T: Number>(buf: &'a [u8], m: usize, what: &'static str) -> Result<(ChunkDecompressor<T>, &'a [u8])> {
    let err = |e: PcoError| CodecError::Pco { what, message: e.to_string() };
    let (fd, rest) = FileDecompressor::new(buf).map_err(err)?;
    check_dict_len(rest, m, what)?;
    let (cd, rest) = fd.chunk_decompressor::<T, &[u8]>(rest).map_err(err)?;
    check_lookback(cd.meta(), m, what)?;
    Ok((cd, rest))
}

/// Decodes `page`, one whole pco page of exactly `dst.len()` numbers, nothing after, into `dst`.
fn read_page<T: Number>(cd: &mut ChunkDecompressor<T>, page: &[u8], dst: &mut [T], what: &'static str) -> Result<()> {
    let err = |e: PcoError| CodecError::Pco { what, message: e.to_string() };
    let k = dst.len();
    let mut pd = cd.page_decompressor(page, k).map_err(err)?;
    let progress = pd.read(dst).map_err(err)?;
    if progress.n_processed != k || !progress.finished {
        return Err(CodecError::LengthMismatch { what, expected: k, actual: progress.n_processed });
    }
    if !pd.into_src().is_empty() {
        return Err(CodecError::Corrupt { what: "pco page (bytes after its numbers)" });
    }
    Ok(())
}

/// Bit layout of the start of a pco 1.x chunk's metadata: a 4-bit mode variant, and for Dict mode (4)
/// a 25-bit dictionary length, LSB-first.
const MODE_BITS: u32 = 4;
const MODE_DICT: u32 = 4;
const DICT_LEN_BITS: u32 = 25;

/// pco's Dict mode allocates its dictionary from the stored length before reading the entries, so 4
/// corrupt bytes could ask for 2²⁵ entries (256 MiB). A dictionary never holds more distinct values than
/// the page has numbers, so anything above `m` is corrupt; we refuse it before pco parses the metadata.
/// (Our writer never uses Dict mode, `ModeSpec::Auto` does not consider it, but we accept it so that
/// switching it on later stays readable.)
fn check_dict_len(chunk: &[u8], m: usize, what: &'static str) -> Result<()> {
    // Zero-extend a short input: pco pads short reads with zeros before it notices the shortage.
    let mut head = [0u8; 4];
    let k = chunk.len().min(4);
    head[..k].copy_from_slice(&chunk[..k]);
    let word = u32::from_le_bytes(head);
    let dict_len = (word >> MODE_BITS) & ((1 << DICT_LEN_BITS) - 1);
    if word & ((1 << MODE_BITS) - 1) == MODE_DICT && dict_len as usize > m {
        return Err(CodecError::LengthMismatch { what, expected: m, actual: dict_len as usize });
    }
    Ok(())
}

/// pco's lookback delta encoding allocates a window buffer of `2 · 2^window_n_log` numbers when a page
/// is opened, and accepts `window_n_log` up to 24 (256 MiB of u64). Its encoder picks a window no
/// larger than the page (and at most 2¹⁵), so a window beyond both 2¹⁶ and `m` is corrupt.
fn check_lookback(meta: &ChunkMeta, m: usize, what: &'static str) -> Result<()> {
    const WINDOW_LOG_ALWAYS_OK: u32 = 16;
    if let DeltaEncoding::Lookback { config, .. } = &meta.delta_encoding {
        let limit = WINDOW_LOG_ALWAYS_OK.max(usize::BITS - m.leading_zeros());
        if config.window_n_log > limit {
            return Err(CodecError::Pco {
                what,
                message: format!("lookback window 2^{} too large", config.window_n_log),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pco::metadata::Mode;

    fn round_trip<T: Number>(nums: &[T]) -> Vec<u8> {
        let mut out = Vec::new();
        assert!(compress(nums, Delta::Auto, Pages::One, Effort::Full, &mut out).is_some());
        assert_eq!(decompress::<T>(&out, nums.len(), "t").unwrap(), nums);
        out
    }

    #[test]
    fn round_trips_and_rejects_wrong_counts() {
        let walk: Vec<i64> = (0..1000).map(|i| (i * 7919 % 13) - 6).collect();
        let out = round_trip(&walk);
        assert!(decompress::<i64>(&out, 999, "t").is_err());
        assert!(decompress::<i64>(&out, 1001, "t").is_err());
        // The wrapped format does not record the number type (i64 and u64 share u64 latents): the
        // column's FieldType, from the segment index, decides it.
        let mut longer = out.clone();
        longer.push(0);
        assert!(decompress::<i64>(&longer, 1000, "t").is_err());
        let floats = [f64::NAN, f64::from_bits(0xfff0_0000_0000_0001), -0.0, f64::INFINITY, 1.5];
        let mut out = Vec::new();
        assert!(compress(&floats, Delta::Auto, Pages::One, Effort::Full, &mut out).is_some());
        let got = decompress::<f64>(&out, floats.len(), "t").unwrap();
        assert_eq!(got.iter().map(|f| f.to_bits()).collect::<Vec<_>>(), floats.map(f64::to_bits));
        round_trip(&[u32::MAX, 0, 7]);
        let mut out = Vec::new();
        assert!(compress::<i64>(&[], Delta::Auto, Pages::One, Effort::Full, &mut out).is_none());
        assert!(out.is_empty());
    }

    /// The Dict guard reads pco's bit layout itself; this checks it against pco's own Dict encoding.
    #[test]
    fn dict_guard_reads_the_dictionary_length_pco_writes() {
        let nums: Vec<u64> = (0..2000).map(|i| [1 << 60, 5, u64::MAX / 3][i % 3]).collect();
        let config = config(vec![nums.len()], Delta::Auto, Effort::Full).with_mode_spec(ModeSpec::TryDict);
        let fc = FileCompressor::default();
        let mut out = Vec::new();
        fc.write_header(&mut out).unwrap();
        let header_len = out.len();
        let cc = fc.chunk_compressor(&nums, &config).unwrap();
        let Mode::Dict(dict) = &cc.meta().mode else { panic!("pco did not pick Dict mode: {:?}", cc.meta().mode) };
        assert_eq!(dict.downcast_ref::<u64>().map(Vec::len), Some(3));
        cc.write_meta(&mut out).unwrap();
        assert!(check_dict_len(&out[header_len..], 3, "t").is_ok());
        assert!(check_dict_len(&out[header_len..], 2, "t").is_err());
    }

    #[test]
    fn huge_dictionary_claims_are_refused_before_allocation() {
        // Count 10, pco header 4.1, then mode Dict with a length of 2^25 - 1.
        let word: u32 = MODE_DICT | (((1 << DICT_LEN_BITS) - 1) << MODE_BITS);
        let mut buf = vec![10, 4, 1];
        buf.extend_from_slice(&word.to_le_bytes());
        assert!(matches!(decompress::<u64>(&buf, 10, "t"), Err(CodecError::LengthMismatch { .. })));
        assert!(decompress::<u64>(&buf[..5], 10, "t").is_err());
    }
}
