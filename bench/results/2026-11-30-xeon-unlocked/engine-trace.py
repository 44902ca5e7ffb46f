import sys; p=sys.argv[1] if len(sys.argv) > 1 else 'crates/sundial-storage/src/engine.rs'
s=open(p).read()
old="""        self.inner.check_poisoned()?;
        let pre = self.inner.prelookup(db, points, cache);
        let waits = &self.inner.waits;
        let t = Instant::now();
        let w = self.inner.write_lock.lock();
        waits.lock_nanos.fetch_add(nanos_since(t), Ordering::Relaxed);
        self.inner.stall_if_behind()?;
        let (batch, rejected, new_keys) = self.inner.resolve(db, points, pre)?;"""
new="""        self.inner.check_poisoned()?;
        let t00 = Instant::now();
        let pre = self.inner.prelookup(db, points, cache);
        let waits = &self.inner.waits;
        let t = Instant::now();
        let tpre = t - t00;
        let w = self.inner.write_lock.lock();
        let tlock = t.elapsed();
        waits.lock_nanos.fetch_add(nanos_since(t), Ordering::Relaxed);
        self.inner.stall_if_behind()?;
        let tr = Instant::now();
        let (batch, rejected, new_keys) = self.inner.resolve(db, points, pre)?;
        let tres = tr.elapsed();
        let _trace = TraceOnDrop(t00, tpre, tlock, tres, Instant::now());"""
assert old in s
s=s.replace(old,new)
blk="""struct TraceOnDrop(Instant, Duration, Duration, Duration, Instant);
impl Drop for TraceOnDrop {
    fn drop(&mut self) {
        if std::env::var_os("SUNDIAL_TRACE_WRITES").is_some() {
            eprintln!("ETRACE pre_us={} lock_us={} resolve_us={} after_us={} total_us={}", self.1.as_micros(), self.2.as_micros(), self.3.as_micros(), self.4.elapsed().as_micros(), self.0.elapsed().as_micros());
        }
    }
}

"""
s=s.replace("/// Series a write request's map", blk+"/// Series a write request's map",1)
open(p,'w').write(s)
