"""A corpus summarized or evaluated in parts: sharded across processes and machines, resumable,
merged in input order (``agentsum summarize --out DIR`` and ``agentsum evaluate``).

The input's rows are cut into parts of ``--part-rows`` rows (1,000 by default: the chunk a process
holds in memory). Part ``p`` belongs to shard ``p mod N``, so every shard gets a share of the whole
corpus and the parts are the same whatever the number of shards: each part is decoded alone (its
batches formed from rows of similar length, its order restored), and a corpus decoded by one
process and by eight gives the same bytes. The shards are

- the ranks of ``torchrun --nproc-per-node N [--nnodes M] -m agentsum summarize ...`` (``RANK`` and
  ``WORLD_SIZE``, as torchrun sets them; no process group is needed, the ranks never talk), and/or
- ``--shard K/N`` (1 <= K <= N), e.g. one SLURM array task each; under torchrun every rank takes its
  share of shard K.

Every shard reads the whole input (reading is cheap beside decoding) and decodes its own parts.
A part is written to ``DIR/parts/`` through a temporary file and a rename, so it is there whole or
not at all: a process killed mid-part loses that part only. The shard that finishes last finds
every part present and merges them into the output, checking that every row is there exactly once
and in order; the parts are then removed and ``DIR/done.json`` records the job. ``--resume``
continues a job from the parts written (also what a torchrun restart does), and refuses an input
whose bytes or settings differ from those the job began with. One process per shard holds
``DIR/locks/``: a second job writing the same parts is refused, naming the first one's host and pid.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from agentsum.config import ConfigError
from agentsum.data.records import DataError

FORMAT = 1
#: A lock whose heartbeat (its file's mtime, touched every HEARTBEAT seconds) is older than this is
#: taken to be left by a dead process on another machine; one on this machine is checked by its pid.
STALE_SECONDS = 120.0
HEARTBEAT = 30.0


class JobError(DataError):
    """A job that cannot start or finish here: another job holds the directory, the input changed
    under a resume, a part is missing or doubled."""


@dataclasses.dataclass(frozen=True)
class Shard:
    """Shard ``index`` (0-based) of ``count``: the parts ``p`` with ``p % count == index``."""

    index: int = 0
    count: int = 1

    @classmethod
    def parse(cls, text: str, option: str = "--shard") -> Shard:
        """``K/N`` with 1 <= K <= N, as written on the command line (1-based)."""
        k, sep, n = text.partition("/")
        try:
            k, n = int(k), int(n)
        except ValueError:
            k = n = 0
        if not sep or not 1 <= k <= n:
            raise ConfigError(f"{option} {text}: expected K/N with 1 <= K <= N, e.g. {option} 2/4 (the second of "
                              f"four shards)")
        return cls(k - 1, n)

    def owns(self, part: int) -> bool:
        return part % self.count == self.index

    def overlaps(self, other: Shard) -> bool:
        """Whether some part belongs to both (p = i mod n and p = j mod m have a solution)."""
        return (self.index - other.index) % math.gcd(self.count, other.count) == 0

    def within(self, rank: int, world: int) -> Shard:
        """Rank ``rank`` of ``world``'s share of this shard."""
        return Shard(self.index * world + rank, self.count * world)

    @property
    def name(self) -> str:
        return f"{self.index + 1}-of-{self.count}"

    def __str__(self) -> str:
        return f"{self.index + 1}/{self.count}"


def launched_shard(shard: Shard | None = None) -> tuple[Shard, int]:
    """This process's shard: ``shard`` (``--shard``, default all) split across torchrun's
    ``WORLD_SIZE`` ranks; and the global rank (0 where torchrun did not launch it)."""
    world, rank = int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("RANK", "0"))
    return (shard or Shard()).within(rank, world), rank


def restarted() -> bool:
    """Whether torchrun restarted this worker group (it then continues the job, as ``--resume``)."""
    return int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") or 0) > 0


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".tmp-{socket.gethostname()}-{os.getpid()}-{path.name}")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Job:
    """One process's view of a job directory: its identity, its lock, its parts.

    ``identity`` is what must not change across a resume (the command, the input's path and digest,
    the rows, the model and the settings); :meth:`begin` checks it, takes the lock and says which
    parts are already written."""

    def __init__(self, out: str | Path, identity: dict, shard: Shard, *, resume: bool, part_rows: int,
                 input_name: str):
        if part_rows < 1:
            raise ConfigError(f"--part-rows {part_rows}: expected at least 1")
        self.out, self.shard, self.resume, self.part_rows = Path(out), shard, resume, part_rows
        self.identity = {**identity, "part_rows": part_rows, "format": FORMAT}
        self.input_name = input_name
        self.parts_dir, self.locks_dir, self.progress_dir = self.out / "parts", self.out / "locks", self.out / "progress"
        self.lock: Path | None = None
        self.host, self.pid = socket.gethostname(), os.getpid()
        self._stop = threading.Event()

    # ------------------------------------------------------------------ start
    def finished(self) -> dict | None:
        """``done.json`` of a finished job with this identity, else None."""
        done = self.out / "done.json"
        if not done.is_file():
            return None
        record = json.loads(done.read_text(encoding="utf-8"))
        return record if record.get("identity") == self.identity else None

    def begin(self) -> set[int]:
        """Check the directory, take this shard's lock; the indices of the parts already written."""
        self.out.mkdir(parents=True, exist_ok=True)
        for d in (self.parts_dir, self.locks_dir, self.progress_dir):
            d.mkdir(exist_ok=True)
        self._take_lock()
        try:
            job_file = self.out / "job.json"
            done = self.out / "done.json"
            if done.is_file():
                if self.resume:  # a finished job of these settings was answered before begin()
                    self._check_identity(json.loads(done.read_text(encoding="utf-8"))["identity"], done)
                done.unlink()  # without --resume a finished job is replaced, as evaluate always did
                self._clear_parts()
                job_file.unlink(missing_ok=True)
            if job_file.is_file() and (self.written_parts() or self.resume):
                self._check_identity(json.loads(job_file.read_text(encoding="utf-8")), job_file)
            else:  # a new job, or one that stopped before writing a part: nothing of it to keep
                (self.out / "rows.json").unlink(missing_ok=True)
                _write_atomic(job_file, json.dumps(self.identity, indent=2) + "\n")
            self._remove_debris()
            written = self.written_parts()
            mine = sorted(p for p in written if self.shard.owns(p))
            if mine and not self.resume:
                raise JobError(f"{self.out}: holds an unfinished job whose parts {mine[:3]}"
                               f"{'...' if len(mine) > 3 else ''} of shard {self.shard} are written; --resume "
                               f"continues it (the parts are kept), or choose another --out")
            return written
        except BaseException:
            self.release()
            raise

    def _check_identity(self, recorded: dict, job_file: Path) -> None:
        if recorded == self.identity:
            return
        if recorded.get("digest") != self.identity.get("digest") and recorded.get("input") == self.identity.get("input"):
            raise JobError(f"{self.input_name}: changed since the job in {self.out} began (its bytes differ from "
                           f"those {job_file} records); summarize it into another --out, or remove {self.out}")
        changed = sorted(k for k in set(recorded) | set(self.identity) if recorded.get(k) != self.identity.get(k))
        detail = "; ".join(f"{k}: {recorded.get(k)!r} then, {self.identity.get(k)!r} now" for k in changed[:4])
        raise JobError(f"{self.out}: holds a job begun with other settings ({detail}); use another --out, or "
                       f"remove {self.out} to start over")

    def _take_lock(self) -> None:
        """``locks/SHARD.json`` naming this host and pid; refused while a live process holds a
        shard that shares parts with this one."""
        for other in sorted(self.locks_dir.glob("*.json")):
            try:
                held = json.loads(other.read_text(encoding="utf-8"))
                age = time.time() - other.stat().st_mtime
            except (OSError, ValueError):
                continue  # removed meanwhile, or being written
            if not Shard(held["shard"][0], held["shard"][1]).overlaps(self.shard):
                continue
            if held["host"] == self.host:
                live = _alive(held["pid"]) and held["pid"] != self.pid
            else:
                live = age < STALE_SECONDS
            if live:
                raise JobError(f"{self.out}: another job is writing here (shard {held['shard'][0] + 1}/"
                               f"{held['shard'][1]}, host {held['host']}, pid {held['pid']}, since "
                               f"{held['started']}); wait for it, or use another --out")
            other.unlink(missing_ok=True)  # left by a process that is gone
        self.lock = self.locks_dir / f"{self.shard.name}.json"
        record = {"host": self.host, "pid": self.pid, "shard": [self.shard.index, self.shard.count],
                  "started": time.strftime("%Y-%m-%d %H:%M:%S")}
        _write_atomic(self.lock, json.dumps(record) + "\n")
        threading.Thread(target=self._heartbeat, daemon=True).start()

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT):
            try:
                os.utime(self.lock)
            except OSError:
                return

    def release(self) -> None:
        self._stop.set()
        if self.lock is not None:
            self.lock.unlink(missing_ok=True)
            self.lock = None
        (self.progress_dir / f"{self.shard.name}.json").unlink(missing_ok=True)

    def _remove_debris(self) -> None:
        """Temporary files of dead processes of this host (a part being written when it was killed)."""
        for tmp in list(self.parts_dir.glob(".tmp-*")) + list(self.out.glob(".tmp-*")):
            parts = tmp.name.split("-", 3)
            if len(parts) == 4 and parts[1] == self.host and parts[2].isdigit() and not _alive(int(parts[2])):
                tmp.unlink(missing_ok=True)

    def _clear_parts(self) -> None:
        for path in self.parts_dir.glob("*"):
            path.unlink(missing_ok=True)

    # ------------------------------------------------------------------ parts
    def part_path(self, part: int) -> Path:
        return self.parts_dir / f"part-{part:06d}.jsonl"

    def written_parts(self) -> set[int]:
        return {int(p.stem.removeprefix("part-")) for p in self.parts_dir.glob("part-*.jsonl")}

    def write_part(self, part: int, first_row: int, records: list[dict], seconds: float) -> None:
        header = {"part": part, "first_row": first_row, "rows": len(records), "seconds": seconds,
                  "shard": str(self.shard), "host": self.host, "pid": self.pid}
        lines = [json.dumps(header)] + [json.dumps({"row": first_row + i, "record": r}, ensure_ascii=False)
                                        for i, r in enumerate(records)]
        _write_atomic(self.part_path(part), "\n".join(lines) + "\n")

    def record_total(self, rows: int) -> None:
        """The input's row count (each shard reads it all: they must agree)."""
        path = self.out / "rows.json"
        if path.is_file():
            known = json.loads(path.read_text(encoding="utf-8"))["rows"]
            if known != rows:
                raise JobError(f"{self.input_name}: {rows:,} rows read now, {known:,} when the job began ({path})")
            return
        _write_atomic(path, json.dumps({"rows": rows}) + "\n")

    def total(self) -> int | None:
        path = self.out / "rows.json"
        return json.loads(path.read_text(encoding="utf-8"))["rows"] if path.is_file() else None

    def parts_needed(self, rows: int) -> int:
        return -(-rows // self.part_rows)

    def complete(self) -> bool:
        rows = self.total()
        return rows is not None and self.written_parts() >= set(range(self.parts_needed(rows)))

    def claim_merge(self) -> bool:
        """Whether this process merges: the first to create ``merge.lock`` does (two shards finishing
        together would otherwise both read the parts while one removes them); a lock left by a dead
        process of this host is taken over."""
        path = self.out / "merge.lock"
        record = json.dumps({"host": self.host, "pid": self.pid})
        for _ in range(2):
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                try:
                    held = json.loads(path.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    return False
                if held.get("host") == self.host and not _alive(held.get("pid", -1)):
                    path.unlink(missing_ok=True)
                    continue
                return False
            with os.fdopen(fd, "w") as handle:
                handle.write(record)
            return True
        return False

    def read_parts(self) -> Iterator[tuple[dict, list[dict]]]:
        """(header, records) of every part, in order, each checked: every row once, in order."""
        rows = self.total()
        if rows is None:
            raise JobError(f"{self.out}: the input was never read to its end (no rows.json)")
        needed = self.parts_needed(rows)
        present = self.written_parts()
        missing = sorted(set(range(needed)) - present)
        if missing:
            raise JobError(f"{self.out}: parts {missing[:5]} of {needed} are missing; rerun the shards that own "
                           f"them with --resume")
        extra = sorted(present - set(range(needed)))
        if extra:
            raise JobError(f"{self.out}: parts {extra[:5]} lie past the input's {rows:,} rows")
        expected = 0
        for part in range(needed):
            with open(self.part_path(part), encoding="utf-8") as handle:
                header = json.loads(handle.readline())
                lines = [json.loads(line) for line in handle]
            want = min(self.part_rows, rows - part * self.part_rows)
            got = [line.get("row") for line in lines]
            if header["part"] != part or got != list(range(expected, expected + want)):
                raise JobError(f"{self.part_path(part)}: holds rows {got[:1]}..{got[-1:]} ({len(got)}), expected "
                               f"{expected}..{expected + want - 1}: every row must be present exactly once")
            expected += want
            yield header, [line["record"] for line in lines]

    def finish(self, outputs: dict) -> None:
        """Record the finished job (``done.json``) and remove its parts."""
        record = {"identity": self.identity, "rows": self.total(), "outputs": outputs,
                  "finished": time.strftime("%Y-%m-%d %H:%M:%S")}
        _write_atomic(self.out / "done.json", json.dumps(record, indent=2) + "\n")
        self._clear_parts()
        for name in ("job.json", "rows.json", "merge.lock"):
            (self.out / name).unlink(missing_ok=True)
        for d in (self.parts_dir, self.locks_dir, self.progress_dir):
            try:
                d.rmdir()  # empty once every shard has released its lock
            except OSError:
                pass

    def abandon(self) -> None:
        """Undo :meth:`begin` for an input that held no rows: nothing is left that looks like output."""
        self.release()
        for name in ("job.json", "rows.json"):
            (self.out / name).unlink(missing_ok=True)
        for d in (self.parts_dir, self.locks_dir, self.progress_dir):
            try:
                d.rmdir()
            except OSError:
                pass

    # ------------------------------------------------------------------ progress
    def report_progress(self, rows: int) -> None:
        """This process's rows decoded in the part it is on (read by :class:`JobProgress`)."""
        _write_atomic(self.progress_dir / f"{self.shard.name}.json", json.dumps({"rows": rows}))

    def rows_done(self, estimate: int | None) -> int:
        """Rows in the parts written plus the rows every live shard has decoded of its current part."""
        rows = self.total() or estimate
        done = 0
        for part in self.written_parts():
            done += self.part_rows if rows is None else max(min(self.part_rows, rows - part * self.part_rows), 0)
        for path in self.progress_dir.glob("*.json"):
            try:
                done += json.loads(path.read_text(encoding="utf-8"))["rows"]
            except (OSError, ValueError, KeyError):
                pass
        return done


class JobProgress:
    """Rows done across all shards, with the rate since this process started and an ETA, on stderr:
    rewritten in place on a terminal, a line every ``every`` seconds otherwise."""

    def __init__(self, job: Job, label: str, estimate: int | None, enabled: bool = True, every: float = 10.0):
        self.job, self.label, self.estimate, self.enabled = job, label, estimate, enabled
        self.live = sys.stderr.isatty()
        self.every = 0.5 if self.live else every
        self.started = self.shown = time.perf_counter()
        self.first = job.rows_done(estimate) if enabled else 0

    def line(self) -> str:
        done = self.job.rows_done(self.estimate)
        rate = (done - self.first) / max(time.perf_counter() - self.started, 1e-9)
        total = self.job.total() or self.estimate
        text = f"{self.label}: {done:,}"
        if total:
            eta = f", ETA {max(total - done, 0) / rate:,.0f}s" if rate > 0 else ""
            text += f"/{total:,} rows ({100 * done / total:.0f}%)"
        else:
            text += " rows"
        return text + f" across all shards, {rate:.2f} rows/s" + (eta if total else "")

    def update(self, final: bool = False) -> None:
        now = time.perf_counter()
        if not self.enabled or (not final and now - self.shown < self.every):
            return
        self.shown = now
        print(("\r" if self.live else "") + self.line(), end="\n" if (final or not self.live) else "",
              file=sys.stderr, flush=True)


def run_job(job: Job, examples: Iterable, decode: Callable[[list, Callable[[int], None]], list[dict]],
            written: set[int], progress: JobProgress | None = None) -> tuple[int, int]:
    """Decode this shard's parts of ``examples`` that are not yet ``written``: ``decode(examples,
    step)`` -> one JSON-able record per example, calling ``step(n)`` as n are done. Returns (parts
    decoded here, rows read). The input's row count is recorded at its end."""
    rows = part = decoded = 0
    pending: list = []

    def flush() -> None:
        nonlocal decoded
        if job.shard.owns(part) and part not in written:
            done = [0]

            def step(n: int) -> None:
                done[0] += n
                job.report_progress(done[0])
                if progress is not None:
                    progress.update()

            started = time.perf_counter()
            records = decode(pending, step)
            job.write_part(part, part * job.part_rows, records, time.perf_counter() - started)
            job.report_progress(0)
            decoded += 1

    for example in examples:
        pending.append(example)
        rows += 1
        if len(pending) == job.part_rows:
            flush()
            pending.clear()
            part += 1
    if pending:
        flush()
    job.record_total(rows)
    return decoded, rows
