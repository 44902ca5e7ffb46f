//! The write-ahead log: numbered files of checksummed records, written by one thread with group commit.
//!
//! Files live in `<data>/wal/` and are named by the sequence number of their first record
//! (`00000000000000000001.wal`, 20 digits so names sort in order). Each file is a [`crate::frame`] file
//! (magic `SDWAL\0\0\0`, version 1) whose records hold encoded [`crate::batch::WriteBatch`]es. Record
//! sequence numbers are implicit: the file's first number plus the record's index.
//!
//! Writers call [`Wal::append`] (cheap: copies the record into a shared buffer and returns its sequence
//! number) and then [`Wal::wait`]. The WAL thread takes everything buffered, writes it with one `write`
//! and, under [`SyncPolicy::Batch`], one `fdatasync`, then wakes every writer whose record it covered: many
//! concurrent requests share one fsync. Under [`SyncPolicy::Interval`] writers are released once their
//! record is written to the OS (it survives the process being killed, not a power loss) and the thread
//! fsyncs at least every interval: a power loss loses at most that window.
//!
//! A failed write or fsync poisons the WAL: after an fsync error the kernel may have dropped the dirty
//! pages, so the only safe answer is to stop acknowledging writes until a restart replays the log.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::error::{Error, Result};
use crate::frame;
use crate::limits::{WAL_FILE_BYTES_MAX, WAL_RECORD_BYTES_MAX};

pub const MAGIC: &[u8; 8] = b"SDWAL\0\0\0";
pub const VERSION: u32 = 1;

/// When a write is acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncPolicy {
    /// fsync before acknowledging (group commit). The default.
    Batch,
    /// Acknowledge once written to the OS; fsync at least every this many milliseconds.
    Interval(Duration),
}

impl std::str::FromStr for SyncPolicy {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        if s == "batch" {
            return Ok(SyncPolicy::Batch);
        }
        if let Some(ms) = s.strip_prefix("interval:") {
            let ms: u64 = ms.trim_end_matches("ms").parse().map_err(|_| format!("bad interval in {s:?}"))?;
            if ms == 0 {
                return Err("interval must be at least 1 ms".into());
            }
            return Ok(SyncPolicy::Interval(Duration::from_millis(ms)));
        }
        Err(format!("unknown WAL sync policy {s:?}: expected `batch` or `interval:<ms>`"))
    }
}

struct State {
    /// Framed records not yet handed to the thread.
    pending: Vec<u8>,
    /// Sequence number the next appended record gets.
    next_seq: u64,
    /// Every record with a smaller number is written to the OS / fsynced.
    written_end: u64,
    synced_end: u64,
    rotate_requested: bool,
    /// Incremented when a requested rotation is done; `rotated_at` is the new file's first sequence.
    rotations: u64,
    rotated_at: u64,
    error: Option<String>,
    shutdown: bool,
}

struct Shared {
    state: Mutex<State>,
    /// Wakes the thread (work to do) and writers (progress made).
    work: Condvar,
    progress: Condvar,
}

pub struct Wal {
    dir: PathBuf,
    policy: SyncPolicy,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

fn file_name(first_seq: u64) -> String {
    format!("{first_seq:020}.wal")
}

/// The WAL files in `dir` with their first sequence numbers, ascending.
pub fn list_files(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let mut files = Vec::new();
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(files),
        Err(e) => return Err(Error::io(dir, e)),
    };
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let name = entry.file_name();
        let Some(seq) = name.to_str().and_then(|n| n.strip_suffix(".wal")).and_then(|n| n.parse().ok()) else {
            continue;
        };
        files.push((seq, entry.path()));
    }
    files.sort();
    Ok(files)
}

/// Replays every record of every WAL file in `dir`, in order, truncating torn tails. Returns the sequence
/// number the next record must get.
pub fn replay(dir: &Path, mut apply: impl FnMut(u64, &[u8]) -> Result<()>) -> Result<u64> {
    let files = list_files(dir)?;
    let mut next_seq = 1;
    for (i, (first, path)) in files.iter().enumerate() {
        let io = |e| Error::io(path, e);
        let bytes = std::fs::read(path).map_err(io)?;
        if bytes.len() < frame::HEADER_BYTES || frame::check_header(&bytes, MAGIC) != Some(VERSION) {
            if bytes.len() < frame::HEADER_BYTES {
                // A file created by a crash before its header was durable holds no records.
                tracing::warn!(path = %path.display(), "ignoring WAL file with a torn header");
                continue;
            }
            return Err(Error::Corrupt { path: path.clone(), offset: 0, what: "not a Sundial WAL file of version 1".into() });
        }
        if *first < next_seq {
            return Err(Error::Corrupt { path: path.clone(), offset: 0, what: format!("WAL files overlap at sequence {first}") });
        }
        let mut frames = frame::Frames::new(&bytes[frame::HEADER_BYTES..], WAL_RECORD_BYTES_MAX);
        let mut seq = *first;
        for payload in frames.by_ref() {
            apply(seq, payload)?;
            seq += 1;
        }
        if let Some(why) = frames.torn() {
            let keep = (frame::HEADER_BYTES + frames.valid_len()) as u64;
            let later = files.len() - i - 1;
            tracing::warn!(path = %path.display(), offset = keep, why, later_files = later, "truncating torn WAL tail");
            let f = OpenOptions::new().write(true).open(path).map_err(io)?;
            f.set_len(keep).map_err(io)?;
            f.sync_all().map_err(io)?;
        }
        next_seq = seq;
    }
    Ok(next_seq)
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| Error::io(dir, e))
}

fn create_file(dir: &Path, first_seq: u64) -> Result<(File, PathBuf)> {
    let path = dir.join(file_name(first_seq));
    let io = |e| Error::io(&path, e);
    // A file with this name can only exist if replay found no valid record in it (its first sequence
    // number is the next one to write), so truncating it loses nothing.
    let mut f = OpenOptions::new().write(true).create(true).truncate(true).open(&path).map_err(io)?;
    f.write_all(&frame::header(MAGIC, VERSION)).map_err(io)?;
    f.sync_all().map_err(io)?;
    sync_dir(dir)?;
    Ok((f, path))
}

impl Wal {
    /// Starts a new WAL file numbered `next_seq` (as returned by [`replay`]) and the WAL thread.
    pub fn open(dir: &Path, next_seq: u64, policy: SyncPolicy) -> Result<Wal> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let (file, path) = create_file(dir, next_seq)?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                pending: Vec::new(),
                next_seq,
                written_end: next_seq,
                synced_end: next_seq,
                rotate_requested: false,
                rotations: 0,
                rotated_at: next_seq,
                error: None,
                shutdown: false,
            }),
            work: Condvar::new(),
            progress: Condvar::new(),
        });
        let t = Writer { dir: dir.to_path_buf(), policy, shared: shared.clone(), file, path, file_bytes: 16 };
        let thread = std::thread::Builder::new()
            .name("sundial-wal".into())
            .spawn(move || t.run())
            .map_err(|e| Error::io(dir, e))?;
        Ok(Wal { dir: dir.to_path_buf(), policy, shared, thread: Some(thread) })
    }

    /// Queues one record; returns its sequence number. Durable only after [`Wal::wait`].
    pub fn append(&self, payload: &[u8]) -> Result<u64> {
        if payload.len() > WAL_RECORD_BYTES_MAX {
            return Err(Error::LimitExceeded {
                what: "WAL record bytes",
                actual: payload.len() as u64,
                limit: WAL_RECORD_BYTES_MAX as u64,
                fix: "send smaller write requests",
            });
        }
        let mut s = self.shared.state.lock();
        if let Some(e) = &s.error {
            return Err(Error::Poisoned(e.clone()));
        }
        frame::put_record(&mut s.pending, payload);
        let seq = s.next_seq;
        s.next_seq += 1;
        self.shared.work.notify_one();
        Ok(seq)
    }

    /// The sequence number the next appended record will get: every record appended so far has a
    /// smaller one.
    pub fn next_seq(&self) -> u64 {
        self.shared.state.lock().next_seq
    }

    /// Blocks until record `seq` is durable under the sync policy.
    pub fn wait(&self, seq: u64) -> Result<()> {
        let mut s = self.shared.state.lock();
        loop {
            if let Some(e) = &s.error {
                return Err(Error::Poisoned(e.clone()));
            }
            let end = match self.policy {
                SyncPolicy::Batch => s.synced_end,
                SyncPolicy::Interval(_) => s.written_end,
            };
            if end > seq {
                return Ok(());
            }
            self.shared.progress.wait(&mut s);
        }
    }

    /// Finishes the current file (everything appended so far is written and fsynced) and starts a new one.
    /// Returns the new file's first sequence number: every earlier record is in older files.
    pub fn rotate(&self) -> Result<u64> {
        let mut s = self.shared.state.lock();
        let target = s.rotations + 1;
        s.rotate_requested = true;
        self.shared.work.notify_one();
        loop {
            if let Some(e) = &s.error {
                return Err(Error::Poisoned(e.clone()));
            }
            if s.rotations >= target {
                return Ok(s.rotated_at);
            }
            self.shared.progress.wait(&mut s);
        }
    }

    /// Deletes every file whose records all have sequence numbers below `seq_end`.
    pub fn delete_before(&self, seq_end: u64) -> Result<()> {
        let files = list_files(&self.dir)?;
        for w in files.windows(2) {
            let (next_first, path) = (w[1].0, &w[0].1);
            if next_first <= seq_end {
                std::fs::remove_file(path).map_err(|e| Error::io(path, e))?;
            }
        }
        Ok(())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Wal {
    fn drop(&mut self) {
        self.shared.state.lock().shutdown = true;
        self.shared.work.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The WAL thread's own state: the open file.
struct Writer {
    dir: PathBuf,
    policy: SyncPolicy,
    shared: Arc<Shared>,
    file: File,
    path: PathBuf,
    file_bytes: u64,
}

impl Writer {
    fn run(mut self) {
        let mut buf = Vec::new();
        let mut last_sync = Instant::now();
        loop {
            let (end, rotate, shutdown) = {
                let mut s = self.shared.state.lock();
                while s.pending.is_empty() && !s.rotate_requested && !s.shutdown {
                    let dirty = s.written_end > s.synced_end;
                    match (self.policy, dirty) {
                        (SyncPolicy::Interval(d), true) => {
                            let left = d.saturating_sub(last_sync.elapsed());
                            if left.is_zero() || self.shared.work.wait_for(&mut s, left).timed_out() {
                                break;
                            }
                        }
                        _ => self.shared.work.wait(&mut s),
                    }
                }
                std::mem::swap(&mut buf, &mut s.pending);
                (s.next_seq, s.rotate_requested, s.shutdown)
            };
            let result = self.step(&buf, end, rotate, shutdown, &mut last_sync);
            buf.clear();
            let mut s = self.shared.state.lock();
            match result {
                Ok(synced) => {
                    s.written_end = end;
                    if synced {
                        s.synced_end = end;
                    }
                    if rotate {
                        s.rotate_requested = false;
                        s.rotations += 1;
                        s.rotated_at = end;
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "WAL write failed; refusing further writes until restart");
                    s.error = Some(e.to_string());
                }
            }
            self.shared.progress.notify_all();
            if shutdown || s.error.is_some() {
                return;
            }
        }
    }

    /// Writes `buf` (records up to `end`), fsyncs if the policy or `force_sync` asks, and rotates the file
    /// if asked or if it grew too large. Returns whether everything written is now fsynced.
    fn step(&mut self, buf: &[u8], end: u64, rotate: bool, force_sync: bool, last_sync: &mut Instant) -> Result<bool> {
        let io = |path: &Path, e| Error::io(path, e);
        if !buf.is_empty() {
            self.file.write_all(buf).map_err(|e| io(&self.path, e))?;
            self.file_bytes += buf.len() as u64;
        }
        let rotate = rotate || self.file_bytes >= WAL_FILE_BYTES_MAX;
        let sync = rotate
            || force_sync
            || match self.policy {
                SyncPolicy::Batch => true,
                SyncPolicy::Interval(d) => last_sync.elapsed() >= d,
            };
        if sync {
            self.file.sync_data().map_err(|e| io(&self.path, e))?;
            *last_sync = Instant::now();
        }
        if rotate {
            let (file, path) = create_file(&self.dir, end)?;
            self.file = file;
            self.path = path;
            self.file_bytes = frame::HEADER_BYTES as u64;
        }
        Ok(sync)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(dir: &Path) -> (Vec<(u64, Vec<u8>)>, u64) {
        let mut got = Vec::new();
        let next = replay(dir, |seq, p| {
            got.push((seq, p.to_vec()));
            Ok(())
        })
        .unwrap();
        (got, next)
    }

    #[test]
    fn records_survive_reopen_in_order_across_rotations() {
        let dir = tempfile::tempdir().unwrap();
        let wal = Wal::open(dir.path(), 1, SyncPolicy::Batch).unwrap();
        let a = wal.append(b"one").unwrap();
        let b = wal.append(b"two").unwrap();
        wal.wait(b).unwrap();
        let first_new = wal.rotate().unwrap();
        assert_eq!((a, b, first_new), (1, 2, 3));
        let c = wal.append(b"three").unwrap();
        wal.wait(c).unwrap();
        drop(wal);
        let (got, next) = collect(dir.path());
        assert_eq!(got, vec![(1, b"one".to_vec()), (2, b"two".to_vec()), (3, b"three".to_vec())]);
        assert_eq!(next, 4);
    }

    #[test]
    fn delete_before_keeps_files_with_needed_records() {
        let dir = tempfile::tempdir().unwrap();
        let wal = Wal::open(dir.path(), 1, SyncPolicy::Batch).unwrap();
        wal.wait(wal.append(b"a").unwrap()).unwrap();
        let boundary = wal.rotate().unwrap();
        wal.wait(wal.append(b"b").unwrap()).unwrap();
        wal.delete_before(boundary).unwrap();
        drop(wal);
        let (got, _) = collect(dir.path());
        assert_eq!(got, vec![(2, b"b".to_vec())]);
    }

    #[test]
    fn torn_tail_is_truncated_and_writing_continues_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let wal = Wal::open(dir.path(), 1, SyncPolicy::Interval(Duration::from_millis(5))).unwrap();
        for i in 0..10u8 {
            wal.wait(wal.append(&[i; 100]).unwrap()).unwrap();
        }
        drop(wal);
        let path = list_files(dir.path()).unwrap()[0].1.clone();
        let len = std::fs::metadata(&path).unwrap().len();
        OpenOptions::new().write(true).open(&path).unwrap().set_len(len - 50).unwrap();
        let (got, next) = collect(dir.path());
        assert_eq!(got.len(), 9);
        assert_eq!(next, 10);
        let wal = Wal::open(dir.path(), next, SyncPolicy::Batch).unwrap();
        wal.wait(wal.append(b"after").unwrap()).unwrap();
        drop(wal);
        let (got, _) = collect(dir.path());
        assert_eq!(got.last().unwrap(), &(10, b"after".to_vec()));
    }

    #[test]
    fn concurrent_writers_share_fsyncs_and_all_records_land() {
        let dir = tempfile::tempdir().unwrap();
        let wal = Arc::new(Wal::open(dir.path(), 1, SyncPolicy::Batch).unwrap());
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let wal = wal.clone();
                std::thread::spawn(move || {
                    for i in 0..50u32 {
                        let seq = wal.append(&[t as u8, i as u8]).unwrap();
                        wal.wait(seq).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        drop(Arc::try_unwrap(wal).ok().unwrap());
        let (got, next) = collect(dir.path());
        assert_eq!(got.len(), 400);
        assert_eq!(next, 401);
    }

    #[test]
    fn policies_parse() {
        assert_eq!("batch".parse::<SyncPolicy>().unwrap(), SyncPolicy::Batch);
        assert_eq!("interval:100".parse::<SyncPolicy>().unwrap(), SyncPolicy::Interval(Duration::from_millis(100)));
        assert!("interval:0".parse::<SyncPolicy>().is_err());
        assert!("sometimes".parse::<SyncPolicy>().is_err());
    }
}
