#!/usr/bin/env python3
"""Judges a power-loss drill (Tests/kernel/powerloss.sh): WORK holds each boot's log and the copy of the disk
the boot after it found, and delivered.txt, what a subscriber received through every cut.

For each cut boot k, every seq its gateway logged as durable ("spool: seq A...B durable", logged once the commit
returned) must be in boot k+1's copy of the spool (readings or dead letters) or have been delivered; no boot may
issue a seq an earlier boot had issued; a seq delivered twice carries the same reading both times; every boot's
gateway opened its spool (salvaging a damaged one is allowed, and counted); every boot reached the moment its cut
was set for. Half the gateway boots have no broker, so their readings can only survive on the disk: enough durable
readings must have been found in the next boot's spool without ever having been delivered, or the drill tested the
broker, not the disk. The control boot writes a file at synchronous=FULL, then goes on at synchronous=OFF: the cut
must keep every synced row and lose some of the unsynced tail, or the cut was not a power cut. A salvage boot is cut
while its gateway salvages a damaged spool, a checkpoint boot while its gateway checkpoints a write-ahead log grown
for it: the next boot must finish the one and read every reading after the other, and each run must have landed at
least one cut inside a salvage and torn at least one checkpoint.

With --expect-loss (POWER_VARIANT=nofsync: a gateway that skips its commit fsync) the verdict is inverted: it passes
once a reading confirmed durable was lost, which is what the drill is for. Prints PASS/FAIL lines, the figures, and
"N passed, N failed"; exits 1 on any failure."""
import json, os, re, shutil, sqlite3, sys, tempfile

expect_loss = "--expect-loss" in sys.argv
args = [a for a in sys.argv[1:] if a != "--expect-loss"]
work, boots = args[0], int(args[1])
results = os.path.join(work, "results")
passed = failed = 0


def check(name, ok, why=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"PASS {name}")
    else:
        failed += 1
        print(f"FAIL {name}: {why}")


def found_rows(boot, name, queries):
    """The rows of `name` as boot `boot` found it, read from a copy (opening runs WAL recovery, which writes)."""
    src = os.path.join(results, f"boot-{boot}", "found")
    if not os.path.exists(os.path.join(src, name)):
        return set(), "absent"
    with tempfile.TemporaryDirectory() as tmp:
        for f in os.listdir(src):
            if f.startswith(name):
                shutil.copy(os.path.join(src, f), tmp)
        try:
            db = sqlite3.connect(os.path.join(tmp, name))
            rows = set()
            for q in queries:
                rows |= {r[0] for r in db.execute(q)}
            db.close()
            return rows, "ok"
        except sqlite3.DatabaseError as e:
            return set(), f"unreadable: {e}"


def sound(boot, name):
    """PRAGMA quick_check of `name` (with its log) as boot `boot` found it, on a copy: "ok" or SQLite's complaint."""
    src = os.path.join(results, f"boot-{boot}", "found")
    with tempfile.TemporaryDirectory() as tmp:
        for f in os.listdir(src) if os.path.isdir(src) else []:
            if f.startswith(name):
                shutil.copy(os.path.join(src, f), tmp)
        try:
            db = sqlite3.connect(os.path.join(tmp, name))
            verdict = "; ".join(r[0] for r in db.execute("PRAGMA quick_check"))
            db.close()
            return verdict
        except sqlite3.DatabaseError as e:
            return f"unreadable: {e}"


def log_lines(boot, name):
    path = os.path.join(results, f"boot-{boot}", name)
    return open(path, errors="replace").read().splitlines() if os.path.exists(path) else []


# The control boot: rows committed at synchronous=FULL ("synced N"), then more at synchronous=OFF ("committed N"),
# then the cut: the synced head of the existing file is kept, some of its unsynced tail lost.
control = log_lines(1, "control.log")
synced = {int(l.split()[1]) for l in control if l.startswith("synced ")}
committed = {int(l.split()[1]) for l in control if l.startswith("committed ")}
kept, state = found_rows(2, "control.sqlite", ["SELECT n FROM rows"])
lost_control = committed - kept
if not expect_loss:
    check("the cut keeps what was synced and loses some of what was not (control: FULL, then OFF)",
          len(synced) > 0 and synced <= kept and len(committed) > 0 and len(lost_control) > 0,
          f"{len(synced)} synced rows, {len(synced - kept)} of them lost; {len(committed)} unsynced, "
          f"{len(lost_control)} lost ({state}): the VM's cut is not a power cut")
# powerloss.sh writes which boot, if any, never reached its trigger (it stops the drill there).
untriggered_file = os.path.join(work, "untriggered.txt")
untriggered = open(untriggered_file).read().strip() if os.path.exists(untriggered_file) else ""
check("every boot reached the moment its cut was set for", not untriggered, untriggered)

# What was delivered: seq -> the distinct payloads seen for it (QoS 1 may repeat a reading, never change it).
delivered = {}
for line in open(os.path.join(work, "delivered.txt"), errors="replace"):
    topic, _, payload = line.rstrip("\n").partition(" ")
    try:
        seq = json.loads(payload).get("seq")
    except ValueError:
        continue
    if isinstance(seq, int):
        delivered.setdefault(seq, set()).add(payload)

# What each boot was for (powerloss.sh writes "N MODE (broker port P): CUT"): run, salvage, checkpoint, control, final.
cuts_file = os.path.join(work, "cuts.txt")
modes = {int(l.split()[0]): l.split()[1]
         for l in (open(cuts_file).read().splitlines() if os.path.exists(cuts_file) else []) if len(l.split()) > 1}


def readings_kept(before_boot, after_boot):
    """The readings the spool held as `before_boot` found it: how many, and what is wrong if one is in neither the
    spool `after_boot` found (readings or dead letters) nor what was delivered."""
    before, state = found_rows(before_boot, "spool.sqlite", ["SELECT seq FROM readings"])
    after, after_state = found_rows(after_boot, "spool.sqlite", ["SELECT seq FROM readings",
                                                                  "SELECT seq FROM dead_letters"])
    missing = sorted(q for q in before if q not in after and q not in delivered)
    problem = (None if state == "ok" and after_state == "ok" and not missing else
               f"before: {state}, after: {after_state}; {len(missing)} missing, first {missing[:10]}")
    return len(before), problem


durable_line = re.compile(r"spool: seq (\d+)\.\.\.(\d+) durable")
confirmed_total, found_total, lost_total, salvaged, committed_boots, sampling_boots = set(), 0, [], 0, 0, 0
disk_only = 0
issued_before = 0
reused = []
for k in range(2, boots):
    lines = log_lines(k, "gateway.log")
    confirmed, batches = set(), 0
    for line in lines:
        m = durable_line.search(line)
        if m:
            confirmed |= set(range(int(m.group(1)), int(m.group(2)) + 1))
            batches += m.group(1) != m.group(2)
    # (The salvage and checkpoint boots are cut before their first commit of samples, by design.)
    sampling_boots += batches > 0 and modes.get(k, "run") == "run"
    if any("set aside" in l or "corruption" in l or "salvage" in l.lower() for l in lines):
        salvaged += 1
    fatal = [l for l in lines if l.startswith("Error:") or "cannot open" in l]
    if fatal and not expect_loss:
        check(f"boot {k}: the gateway started", False, fatal[0])
    if confirmed:
        committed_boots += 1
        if min(confirmed) <= issued_before:
            reused.append((k, min(confirmed), issued_before))
        issued_before = max(issued_before, max(confirmed))
    spool, state = found_rows(k + 1, "spool.sqlite",
                              ["SELECT seq FROM readings", "SELECT seq FROM dead_letters"])
    # (Without its fsync a gateway may leave no spool at all: that is its readings lost, counted below.)
    if confirmed and state != "ok" and not expect_loss:
        check(f"cut {k - 1}: the next boot reads the spool", False, state)
    lost = sorted(s for s in confirmed if s not in spool and s not in delivered)
    # A boot without a broker delivered nothing before its cut: what it confirmed survived on the disk or not at
    # all (the next boot may deliver it from the spool).
    if not any("connected to mqtt://" in l for l in lines):
        disk_only += len(confirmed & spool)
    confirmed_total |= confirmed
    found_total += len(confirmed) - len(lost)
    if lost:
        lost_total.append((k, lost))

if expect_loss:
    check("the drill catches a gateway that skips its commit fsync: a seq confirmed durable was lost",
          bool(lost_total), f"{len(confirmed_total)} confirmed over {boots - 2} cuts, none lost")
    print(f"power-loss variant (no commit fsync): {boots - 2} cuts; "
          + ("; ".join(f"boot {k}: {len(l)} of its durable seqs lost" for k, l in lost_total) or "nothing lost"))
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
check("every seq confirmed durable before a cut is in the next boot's spool or was delivered",
      not lost_total and confirmed_total,
      "; ".join(f"boot {k}: {len(l)} lost, first {l[:10]}" for k, l in lost_total) or "nothing was confirmed")
check("the disk kept readings the broker never had (at least 50 seqs confirmed by boots without a broker were in the "
      "next boot's spool)", disk_only >= 50, f"only {disk_only}: the drill tested the broker, not the disk")
check("no boot issues a seq an earlier boot issued", not reused,
      "; ".join(f"boot {k} began at {m}, an earlier boot had issued up to {b}" for k, m, b in reused))
twice = sorted(s for s, p in delivered.items() if len(p) > 1)
check("a seq delivered twice is the same reading", not twice, f"seqs with different readings: {twice[:10]}")
run_boots = sum(modes.get(k, "run") == "run" for k in range(2, boots))
check("the gateways committed the scan's samples in at least half the plain gateway boots (the drill exercised the "
      "spool)", sampling_boots >= run_boots // 2, f"only {sampling_boots} of {run_boots} boots committed samples")

# The salvage boots (mode salvage in drill.env): the spool was damaged and the cut fell as the salvage began. Where the
# next boot found the salvage's marker, the cut landed inside it: that boot must have finished it, and no reading
# that was in the spool before the damage (as the salvage boot found it) may be missing from the spool the boot after
# found, unless it was delivered.
salvage_boots = [k for k, mode in sorted(modes.items()) if mode == "salvage" and k < boots - 1]
landed = []
for s in salvage_boots:
    marker = os.path.exists(os.path.join(results, f"boot-{s + 1}", "found", "spool.sqlite.salvaging"))
    if not marker:
        continue
    landed.append(s)
    # Cut after the file was moved aside, the next start resumes the salvage; cut between the marker and the move, the
    # file is still where it was, still damaged, and is salvaged again from the start. Either way it must be finished:
    # no marker left for the boot after.
    lines = log_lines(s + 1, "gateway.log")
    how = ("resumed" if any("resumed the salvage" in l for l in lines)
           else "salvaged again" if any("moved aside to" in l for l in lines) else "")
    left = os.path.exists(os.path.join(results, f"boot-{s + 2}", "found", "spool.sqlite.salvaging"))
    check(f"boot {s + 1} finishes the salvage boot {s}'s cut interrupted ({how or 'no salvage'})", how and not left,
          "its gateway's log says it neither resumed nor redid the salvage" if not how
          else "the salvage's marker was still there at the next boot")
    held, problem = readings_kept(s, s + 2)
    check(f"a salvage cut short at boot {s} loses no reading ({held} in the spool before the damage)", not problem,
          problem)
if salvage_boots:
    check("at least one cut landed while the spool was being salvaged (the next boot found the salvage's marker)",
          bool(landed), f"salvage boots {salvage_boots}: each salvage was over, or not begun, when its cut fell")

# The checkpoint boots (mode checkpoint): the write-ahead log was grown with some 1,000 random page images before the
# gateway started (the guest kept a copy, "ballasted"), and the cut fell while the gateway's first checkpoint wrote them
# into the file. The next boot's copy of the file alone (its log left out) tells how far it got: each of those pages
# holds the log's image (copied), what it held before (not copied: a page past the old end reads as zeros or not at
# all), or neither (a later commit of the gateway's own, reusing the page, was checkpointed over it). Copied and not
# copied side by side means the cut tore the checkpoint, which is the case this is for. Whatever it found, that boot
# must read every reading that was in the spool when the ballasted boot began (or it was delivered), and the file
# must be sound.


def wal_images(path):
    """The latest committed image of each page in a write-ahead log (https://sqlite.org/fileformat2.html#walformat)."""
    data = open(path, "rb").read() if os.path.exists(path) else b""
    if len(data) < 32:
        return {}, 0
    page_size = int.from_bytes(data[8:12], "big")
    salt = data[16:24]
    images, pending, at = {}, {}, 32
    while at + 24 + page_size <= len(data):
        head = data[at:at + 24]
        if head[8:16] != salt:
            break
        pending[int.from_bytes(head[0:4], "big")] = data[at + 24:at + 24 + page_size]
        if int.from_bytes(head[4:8], "big"):  # a commit frame: the transaction's pages count from here
            images.update(pending)
            pending = {}
        at += 24 + page_size
    return images, page_size


def checkpoint_progress(k):
    """Of the pages the ballasted log held with new images: how many the next boot's file holds, how many it holds
    as before, how many neither."""
    kept = os.path.join(results, f"boot-{k}", "ballasted")
    images, page_size = wal_images(os.path.join(kept, "spool.sqlite-wal"))
    if not images:
        return 0, 0, 0

    def read(path):
        return open(path, "rb").read() if os.path.exists(path) else b""

    before = read(os.path.join(kept, "spool.sqlite"))
    after = read(os.path.join(results, f"boot-{k + 1}", "found", "spool.sqlite"))

    def page(data, n):
        content = data[(n - 1) * page_size:n * page_size]
        return content if content.strip(b"\0") else b""  # a page past the end, or a hole, is nothing

    copied = as_before = neither = 0
    for n, image in images.items():
        old, now = page(before, n), page(after, n)
        if old == image:
            continue
        if now == image:
            copied += 1
        elif now == old:
            as_before += 1
        else:
            neither += 1
    return copied, as_before, neither


checkpoint_boots = [k for k, mode in sorted(modes.items()) if mode == "checkpoint" and k < boots]
torn, checkpoint_figures = [], []
for c in checkpoint_boots:
    copied, as_before, neither = checkpoint_progress(c)
    figure = f"{copied} of {copied + as_before + neither} pages copied, {as_before} not, {neither} rewritten since"
    checkpoint_figures.append(f"boot {c}: {figure}")
    if copied and as_before:
        torn.append(c)
    check(f"the checkpoint boot {c} grew the log past SQLite's threshold", copied + as_before + neither >= 1000,
          f"only {copied + as_before + neither} new pages in the log")
    held, problem = readings_kept(c, c + 1)
    check(f"a checkpoint cut at boot {c} ({figure}) loses no reading ({held} in the spool before it)", not problem,
          problem)
    verdict = sound(c + 1, "spool.sqlite")
    check(f"the spool a checkpoint cut at boot {c} left is sound (quick_check)", verdict == "ok", verdict)
if checkpoint_boots:
    check("at least one cut tore a checkpoint (the next boot's file held some of the log's pages, not all)",
          bool(torn), "; ".join(checkpoint_figures))

cuts = boots - 2
print(f"power-loss figures: {cuts} cuts of a gateway and 1 control cut; {len(confirmed_total)} readings confirmed "
      f"durable before a cut, {found_total} found after it (in the spool or delivered), "
      f"{sum(len(l) for _, l in lost_total)} lost; {disk_only} confirmed without a broker and kept by the disk; "
      f"{len(delivered)} seqs delivered; "
      f"{committed_boots} boots committed, {sampling_boots} of them samples; "
      f"{salvaged} salvages, {len(landed)} of {len(salvage_boots)} salvage cuts inside the salvage; "
      f"{len(torn)} of {len(checkpoint_boots)} checkpoint cuts tore it ({'; '.join(checkpoint_figures) or 'none'}); control: {len(synced)} synced rows kept {len(synced & kept)}, "
      f"{len(committed)} unsynced lost {len(lost_control)}")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
