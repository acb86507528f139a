#!/bin/sh
# One boot of the power-loss drill (Tests/kernel/powerloss.sh), inside the VM: $1 the blegateway binary, $2 the
# results share. The share's drill.env says which boot this is and what it does:
#   control  a writer on the virtio disk, 50 rows at synchronous=FULL, then on at synchronous=OFF, logging each
#            commit (the drill must see it keep the first and lose some of the rest)
#   run      the gateway on the virtio disk, its log (with each commit's durable seqs) on the share
#   salvage  the same, after damaging the spool so that its start must salvage it: the dead letters' table (empty in
#            the drill) gets a malformed root page, so quick_check fails while every reading stays readable; the
#            console hears when the salvage has begun (its marker is on the disk), and the cut falls at once
#   checkpoint  the same, after growing the spool's write-ahead log past SQLite's checkpoint threshold (1000 frames)
#            with new images of some 1,100 free pages the file already has (a table of random bytes, written and
#            dropped: no reading is added or changed), so that the gateway's first commit checkpoints them into the
#            file; the console hears when that first writes to the file (in WAL mode only a checkpoint writes it),
#            and the cut falls during the fsync that follows; the log and the file as they were are kept for the host
#   final    nothing runs: this boot only records what it found
# Every boot first mounts the disk (the kernel replays ext4's journal) and copies what it finds to the share, before
# anything writes to it: that copy is what the host checks against what the previous boot had said was durable.
BIN=$1
OUT=$2
. "$OUT/drill.env"
D=$OUT/boot-$BOOT
mkdir -p "$D/found"
say() { echo "[powerloss] $* (at $(cut -d" " -f1 /proc/uptime) s)" > /dev/console; }

ip link set lo up && ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 && ip route add default via 10.0.2.2 ||
    say "network setup failed"
mkdir -p /run/spool
# commit=60: ext4 commits its journal on its own only every minute, so what is on the disk at a cut is what was
# fsync'd (the spool's commits), not what the journal happened to carry along.
if ! mount -t ext4 -o commit=60 /dev/vda /run/spool 2> "$D/mount.err"; then
    say "mount failed"
    exit 1
fi
for f in /run/spool/*; do
    case $f in *.reserve|*/lost+found) continue ;; esac
    [ -e "$f" ] && cp "$f" "$D/found/"
done
say "found $(ls /run/spool | tr '\n' ' ')"

case $MODE in
final)
    umount /run/spool
    say "final boot done"
    ;;
control)
    say "process starting"
    exec python3 - /run/spool/control.sqlite "$D/control.log" > /dev/console <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA journal_mode = WAL")
db.execute("PRAGMA synchronous = FULL")
db.execute("CREATE TABLE IF NOT EXISTS rows(n INTEGER PRIMARY KEY, body BLOB)")
log = open(sys.argv[2], "w", buffering=1)
n = 0
# A file that exists and whose first rows are on the disk (each commit fsync'd)...
for _ in range(50):
    n += 1
    db.execute("BEGIN")
    db.execute("INSERT INTO rows VALUES(?, zeroblob(200))", (n,))
    db.execute("COMMIT")
    log.write(f"synced {n}\n")
# ... then commits that are not.
db.execute("PRAGMA synchronous = OFF")
while True:
    n += 1
    db.execute("BEGIN")
    db.execute("INSERT INTO rows VALUES(?, zeroblob(200))", (n,))
    db.execute("COMMIT")
    log.write(f"committed {n}\n")
    if n == 51:
        print("[powerloss] committing", flush=True)
PY
    ;;
salvage)
    if ! python3 - /run/spool/spool.sqlite > /dev/console <<'PY'
import os, sqlite3, sys
path = sys.argv[1]
db = sqlite3.connect(path)
# Everything in the file itself first, so the damage below is not overlaid by a newer copy of the page in the WAL.
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
page_size = db.execute("PRAGMA page_size").fetchone()[0]
root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'dead_letters'").fetchone()[0]
letters = db.execute("SELECT count(*) FROM dead_letters").fetchone()[0]
readings = db.execute("SELECT count(*) FROM readings").fetchone()[0]
db.close()
if letters:
    sys.exit(f"[powerloss] the spool holds {letters} dead letters: damaging their table would lose them")
with open(path, "r+b") as f:
    f.seek((root - 1) * page_size)
    f.write(bytes(8))  # page type 0: not a b-tree page
    f.flush()
    os.fsync(f.fileno())
print(f"[powerloss] damaged the dead letters' root page ({root}); {readings} readings to salvage", flush=True)
PY
    then
        say "damage failed"
        exit 1
    fi
    # The salvage has begun once its marker is on the disk (Spool: moved aside, not yet committed in the new file).
    ( while [ ! -e /run/spool/spool.sqlite.salvaging ]; do sleep 0.01; done; say "salvaging" ) &
    MODE=run
    ;;
checkpoint)
    if ! python3 - /run/spool/spool.sqlite "$D/ballasted" > /dev/console <<'PY'
import os, shutil, sqlite3, sys
path, keep = sys.argv[1], sys.argv[2]
if not os.path.exists(path):
    sys.exit("[powerloss] no spool to checkpoint")
# The gateway's own locking (no -shm file) and no checkpoint of this process's own: the log must reach the gateway.
db = sqlite3.connect(path, isolation_level=None)
db.execute("PRAGMA locking_mode = EXCLUSIVE")
db.execute("PRAGMA wal_autocheckpoint = 0")
if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
    sys.exit("[powerloss] the spool is not in WAL mode")
db.execute("PRAGMA synchronous = FULL")
page_size = db.execute("PRAGMA page_size").fetchone()[0]
# Debian's SQLite overwrites freed pages with zeros by default (SECURE_DELETE); left as they are, a page keeps the
# random bytes last written to it, which no other page holds by chance.
db.execute("PRAGMA secure_delete = OFF")


def ballast():
    db.execute("BEGIN")
    db.execute("CREATE TABLE drill_ballast(b BLOB)")
    db.execute("INSERT INTO drill_ballast VALUES(randomblob(?))", (1100 * page_size,))
    db.execute("COMMIT")
    db.execute("DROP TABLE drill_ballast")


# Some 1,100 free pages inside the file first (checkpointed, the log emptied), then new images of the same pages in
# the log: the gateway's checkpoint overwrites pages the file already has. (Pages past the file's end would be
# nothing after a cut until ext4 commits the file's new size, at the end of the fsync: no tear could show.)
ballast()
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
ballast()
frames = (os.path.getsize(path + "-wal") - 32) // (page_size + 24)
# Both commits were fsync'd (synchronous=FULL): what the host compares the next boot's file with.
os.makedirs(keep, exist_ok=True)
for suffix in ("", "-wal"):
    shutil.copy(path + suffix, keep)
print(f"[powerloss] the write-ahead log holds {frames} frames", flush=True)
# Leaving without closing: the last connection's close would checkpoint the log itself.
os._exit(0)
PY
    then
        say "ballast failed"
        exit 1
    fi
    # The checkpoint has begun once it writes to the database file (inotify's IN_MODIFY, through libc). The gateway
    # starts only once the watch is set: the watcher says so through a FIFO.
    mkfifo /run/watching
    python3 - /run/spool/spool.sqlite /run/watching <<'PY' &
import ctypes, os, sys
libc = ctypes.CDLL("libc.so.6", use_errno=True)
fd = libc.inotify_init1(0)
IN_MODIFY = 0x2
if fd < 0 or libc.inotify_add_watch(fd, sys.argv[1].encode(), IN_MODIFY) < 0:
    print("[powerloss] inotify failed: " + os.strerror(ctypes.get_errno()), file=open("/dev/console", "w"))
with open(sys.argv[2], "w") as ready:
    ready.write("watching\n")
os.read(fd, 4096)
with open("/dev/console", "w") as console:
    console.write("[powerloss] checkpointing\n")
PY
    read -r _ < /run/watching
    MODE=run
    ;;
esac

case $MODE in
run)
    say "process starting"
    # The drill's broken variant: a gateway that skips its commit fsync (never a setting).
    [ "$VARIANT" = nofsync ] && export BLEGATEWAY_TEST_SPOOL_WITHOUT_FSYNC=1
    exec "$BIN" run --config "$OUT/gateway.yaml" --gateway-id gw-lobby --device "tcp:10.0.2.2:$HCI_PORT" \
        --broker "mqtt://10.0.2.2:$MQTT_PORT" --prefix pl --spool /run/spool/spool.sqlite --log-level debug 2>&1 |
        tee "$D/gateway.log" | while IFS= read -r line; do
            # The console hears at once (awk would wait to fill its input buffer) of the first commit of more than
            # one reading: the scan's samples are flowing, not just the start's status and adapter state.
            case $line in *"spool: seq "*"..."*" durable"*)
                range=${line##*spool: seq }; range=${range%% durable*}
                [ -z "${told:-}" ] && [ "${range%...*}" != "${range#*...}" ] && say "committing" && told=1 ;;
            esac
        done
    ;;
esac
