"""Every node's logs through a transport: the files a path names on each node (or the engine's own: Slurm's job
output, `kubectl logs`, Ray's session logs), read bounded, saved here a folder per node, each node's clock measured
while they were read; the sources `analyze` reads, and the nodes that gave none, with why."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from logphase.bounded import MAX_RANK, read_int
from logphase.errors import SnapshotError, UsageError
from logphase.logs.reader import LogSource, open_sources
from logphase.logs.server_args import printed_args, shipped_server_args
from logphase.nodes import k8s as kube
from logphase.nodes.k8s import KubernetesTransport
from logphase.nodes.ray_cluster import RAY_SESSION, RayTransport
from logphase.nodes.slurm import SlurmTransport, split_lines_by_label
from logphase.nodes.ssh import SshTransport
from logphase.nodes.transport import NodeRun, Transport, last_words, run_local
from logphase.packs import PackSet, ServerArgsFormat

# What one node's logs may weigh together: the start of each file and its end are kept (a start-up's head says
# the server, its version and node rank; its end where it stopped), the middle of a bigger one left out. Below
# Ray's bound on a task's answer (16 MB), with room for the frames.
NODE_LOG_BYTES = 15 << 20
HEAD_SHARE = 5  # a file cut keeps its first 1/5 of what it may take, and its last 4/5
_FRAMING_BYTES = 1 << 16
# Ray writes each worker's stdout and stderr into its session's logs folder on the node (`ray job submit`'s
# driver into job-driver-*.log); RAY_SESSION is each node's own session folder (nodes/ray_cluster.py).
RAY_SESSION_LOGS = (
    f"{RAY_SESSION}/logs/worker-*.out",
    f"{RAY_SESSION}/logs/worker-*.err",
    f"{RAY_SESSION}/logs/job-driver-*.log",
)
ANY_NODE = "*"

# The script each node runs (POSIX sh: a node needs no logphase for its logs). Its words: a nonce that marks
# its own lines, the node's byte budget, then `SCOPE:PATTERN` pairs (SCOPE a node's Slurm name, or * for any).
# It prints the node's clock first (`date +%s.%N`: read as soon as it arrives here, it dates the clock), then
# each non-empty file a pattern matches, framed by marker lines; a file over what is left of the budget keeps
# its head and its tail.
_SCRIPT = r"""n=$1; left=$2; shift 2
printf '%s clock %s\n' "$n" "$(date +%s.%N)"
me=${SLURMD_NODENAME:-}
IFS='
'
for arg in "$@"; do
  scope=${arg%%:*}; pattern=${arg#*:}
  if [ "$scope" != "*" ] && [ "$scope" != "$me" ]; then continue; fi
  found=0
  for f in $pattern; do
    [ -f "$f" ] || continue
    found=1
    if [ ! -r "$f" ]; then printf '%s unreadable %s\n' "$n" "$f"; continue; fi
    [ -s "$f" ] || continue
    if [ "$left" -le 0 ]; then printf '%s skipped %s\n' "$n" "$f"; continue; fi
    s=$(wc -c < "$f"); s=$((s + 0)); m=$(date -r "$f" +%s 2>/dev/null || echo -)
    printf '%s file %s %s %s\n' "$n" "$s" "$m" "$f"
    if [ "$s" -le "$left" ]; then
      cat "$f"; left=$((left - s))
    else
      h=$((left / __HEAD_SHARE__)); t=$((left - h))
      head -c "$h" "$f"; printf '\n%s cut %s\n' "$n" $((s - h - t)); tail -c "$t" "$f"; left=0
    fi
    printf '\n%s end\n' "$n"
  done
  [ "$found" = 1 ] || printf '%s missing %s\n' "$n" "$pattern"
done
""".replace("__HEAD_SHARE__", str(HEAD_SHARE))


@dataclass(frozen=True)
class ClockOffset:
    """A node's clock minus this machine's, read once: its `date` taken between two clock reads here."""

    offset_s: float
    uncertainty_s: float  # half the time between the two reads here: the node read its clock in between

    @property
    def beyond_doubt(self) -> bool:
        """Whether the clocks differ by more than the measure can tell."""
        return abs(self.offset_s) > self.uncertainty_s


@dataclass(frozen=True)
class NodeFile:
    """One log read on a node, saved here."""

    remote: str  # its path on the node (`kubectl logs POD` for a pod's)
    local: Path
    size: int  # its size on the node
    left_out: int = 0  # bytes of its middle left out (over the node's budget)
    same_as: str | None = None  # the node whose copy of this very file (a shared file system) is judged instead


@dataclass(frozen=True)
class NodeLogs:
    """One node's logs, or why it gave none."""

    node: str
    engine: str
    files: tuple[NodeFile, ...] = ()
    clock: ClockOffset | None = None
    failure: str | None = None  # why no log came: "timeout: …", "auth: …", "no log matches /var/log/x.log"
    notes: tuple[str, ...] = ()  # what else it said: patterns that matched nothing, unreadable files

    @property
    def judged(self) -> tuple[NodeFile, ...]:
        return tuple(f for f in self.files if f.same_as is None)


@dataclass(frozen=True)
class Collection:
    """Every node's logs, and how their ranks are named in the merge."""

    engine: str
    nodes: tuple[NodeLogs, ...]
    global_ranks: bool = False  # the servers number their ranks across nodes (each log states its node rank)
    naming: str = ""  # why the ranks are named as they are, in words

    def lines(self) -> list[str]:
        """What the report says of the nodes (report/sections.py NodesSection): how many gave logs and how their
        ranks are named, then each node that gave none with why, each clock apart, each log cut."""
        given = [node for node in self.nodes if node.judged]
        out = [f"{len(given)} of {len(self.nodes)} nodes gave logs through {self.engine}; {self.naming}"]
        silent = [node for node in self.nodes if node.failure is not None]
        if silent:
            out.append(
                f"{len(silent)} node{'s' if len(silent) > 1 else ''} gave no log: "
                + ", ".join(node.node for node in silent[:32])
                + (f" and {len(silent) - 32} more" if len(silent) > 32 else "")
            )
        for node in silent[:32]:
            out.append(f"{node.node}: {node.failure}")
        for node in self.nodes:
            clock = node.clock
            if clock is not None and clock.beyond_doubt and node.judged:
                way = "ahead of" if clock.offset_s > 0 else "behind"
                out.append(
                    f"{node.node}: its clock is {abs(clock.offset_s):.3f} s {way} this machine's "
                    f"(±{clock.uncertainty_s:.3f} s, measured when its logs were read): its times are moved onto "
                    "this machine's"
                )
            for file in node.files:
                if file.left_out:
                    out.append(
                        f"{node.node}:{file.remote}: {file.left_out:,} bytes of its middle left out (over "
                        f"{NODE_LOG_BYTES >> 20} MB a node)"
                    )
                if file.same_as is not None:
                    out.append(
                        f"{node.node}:{file.remote}: the very file {file.same_as} gave (a shared file "
                        "system), judged once"
                    )
            out += [f"{node.node}: {note}" for note in node.notes]
        return out

    def node_of(self, path: str) -> str | None:
        return next((node.node for node in self.nodes if path.startswith(f"{node.node}:")), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "global_ranks": self.global_ranks,
            "naming": self.naming,
            "nodes": [
                {
                    "node": node.node,
                    "logs": [
                        {"path": f.remote, "bytes": f.size, "left_out": f.left_out, "same_as": f.same_as}
                        for f in node.files
                    ],
                    "clock_offset_s": node.clock.offset_s if node.clock is not None else None,
                    "clock_uncertainty_s": node.clock.uncertainty_s if node.clock is not None else None,
                    "error": node.failure,
                    "notes": list(node.notes),
                }
                for node in self.nodes
            ],
        }


# --- what each node runs ----------------------------------------------------------------------------------


def log_command(nonce: str, patterns: Sequence[tuple[str, str]], budget: int = NODE_LOG_BYTES) -> list[str]:
    """`sh -c SCRIPT` over (scope, pattern) pairs: scope a node's Slurm name, or ANY_NODE."""
    return ["sh", "-c", _SCRIPT, "logphase-logs", nonce, str(budget), *(f"{s}:{p}" for s, p in patterns)]


def check_patterns(patterns: Sequence[str]) -> None:
    for pattern in patterns:
        if not pattern.strip():
            raise UsageError("an empty --log-path", hint="--log-path /var/log/sglang/server.log (a glob is allowed)")
        if "\n" in pattern:
            raise UsageError(f"{pattern!r}: a path of more than one line", hint="one path per --log-path")


# --- reading a node's answer ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """What the script printed on one node."""

    clock: float | None  # the node's wall clock, in seconds since the epoch
    files: tuple[tuple[str, int, bytes, int, float | None], ...]  # (path, size, bytes, bytes left out, mtime)
    notes: tuple[str, ...]


def read_answer(stdout: bytes, nonce: str) -> Answer:
    """The frames of the script's output (its marker lines start with `nonce`, which no log holds)."""
    mark = nonce.encode() + b" "
    clock: float | None = None
    files: list[tuple[str, int, bytes, int, float | None]] = []
    notes: list[str] = []
    position = 0
    while True:
        start = stdout.find(mark, position)
        if start < 0:
            break
        if start > 0 and stdout[start - 1 : start] != b"\n":
            position = start + len(mark)
            continue
        eol = stdout.find(b"\n", start)
        eol = len(stdout) if eol < 0 else eol
        kind, _, rest = stdout[start + len(mark) : eol].decode("utf-8", "replace").partition(" ")
        position = eol + 1
        if kind == "clock":
            try:
                clock = float(rest)
            except ValueError:
                clock = None  # a `date` without %N (busybox prints it as is): no clock
        elif kind == "missing":
            notes.append(f"no file matches {rest}")
        elif kind == "unreadable":
            notes.append(f"{rest}: not readable (permission denied)")
        elif kind == "skipped":
            notes.append(f"{rest}: not read (the node's {NODE_LOG_BYTES >> 20} MB were spent)")
        elif kind == "file":
            size_text, _, rest = rest.partition(" ")
            mtime_text, _, path = rest.partition(" ")
            end = stdout.find(b"\n" + mark + b"end\n", position)
            end = len(stdout) if end < 0 else end  # cut short (timeout, bound): what came
            body, left_out = _uncut(stdout[position:end], mark)
            size = int(size_text) if size_text.isdigit() else len(body)
            files.append((path, size, body, left_out, float(mtime_text) if mtime_text.isdigit() else None))
            position = end + 1
    return Answer(clock, tuple(files), tuple(notes))


def _uncut(body: bytes, mark: bytes) -> tuple[bytes, int]:
    """A file's head and tail joined where its middle was left out; the tail's first line, cut, dropped."""
    at = body.find(b"\n" + mark + b"cut ")
    if at < 0:
        return body, 0
    eol = body.find(b"\n", at + 1)
    count = body[at + 1 + len(mark) + 4 : eol if eol >= 0 else None]
    tail = body[eol + 1 :] if eol >= 0 else b""
    newline = tail.find(b"\n")
    left_out = int(count) if count.isdigit() else 0
    head = body[:at] if body[:at].endswith(b"\n") else body[:at] + b"\n"  # its last line, cut, ends there
    return head + (tail[newline + 1 :] if newline >= 0 else b""), left_out + max(newline + 1, 0)


def clock_offset(run: NodeRun, remote: float | None) -> ClockOffset | None:
    """The node's clock minus this machine's: its reading against the middle of the two reads here around it
    (the run's start and its first output, or its end when that is not known)."""
    if remote is None or not run.wall_started:
        return None
    before = run.wall_at(run.started)
    after = run.wall_at(run.first_output if run.first_output is not None else run.ended)
    return ClockOffset(offset_s=remote - (before + after) / 2, uncertainty_s=max(after - before, 0.0) / 2)


def node_logs(run: NodeRun, nonce: str, engine: str, folder: Path) -> NodeLogs:
    """One node's run of the script → its files saved under `folder/NODE/`, its clock, or why none came."""
    answer = read_answer(run.stdout, nonce)
    clock = clock_offset(run, answer.clock)
    saved = _save(folder, run.node, answer.files, clock)
    notes = list(answer.notes)
    if run.cut:
        notes.append(f"its answer passed {NODE_LOG_BYTES >> 20} MB and was cut there")
    if saved:
        if run.failure is not None:
            notes.append(f"cut short: {run.failure}")
        return NodeLogs(run.node, engine, tuple(saved), clock, None, tuple(notes))
    failure = run.failure
    if failure is None and answer.clock is None and not run.stdout.strip():
        words = last_words(run.stderr)
        failure = f"nothing printed (exit status {run.returncode}{': ' + words if words else ''})"
    if failure is None:
        failure = "no log: " + ("; ".join(notes) if notes else "every file it names is empty")
        notes = []
    return NodeLogs(run.node, engine, (), clock, failure, tuple(notes))


def _save(
    folder: Path, node: str, files: Sequence[tuple[str, int, bytes, int, float | None]], clock: ClockOffset | None
) -> list[NodeFile]:
    """Each file under `folder/<node>-…/`, named by its place (the node's paths may repeat a base name), last
    written when it was on the node (on this machine's clock): a live log's silence is measured from then."""
    if not files:
        return []
    # a folder of its own: two node names may read alike once made safe for a file name (`a/b`, `a_b`)
    here = Path(tempfile.mkdtemp(prefix=f"{_safe(node)}-", dir=folder))
    saved = []
    for index, (remote, size, data, left_out, mtime) in enumerate(files):
        local = here / f"{index:04d}-{_safe(Path(remote).name) or 'log'}"
        local.write_bytes(data)
        if mtime is not None:
            moved = mtime - (clock.offset_s if clock is not None and clock.beyond_doubt else 0.0)
            os.utime(local, (moved, moved))
        saved.append(NodeFile(remote=remote, local=local, size=size, left_out=left_out))
    return saved


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)[:100]


def shared_files(nodes: Sequence[NodeLogs]) -> list[NodeLogs]:
    """A file two nodes read at the same path with the same bytes is one file of a shared file system (an NFS
    home, nodes on one machine): judged once, as the first node's. Hashed only where a path repeats."""
    by_path: dict[str, list[tuple[str, str]]] = {}  # a path: the (digest, node) of each copy judged so far
    out: list[NodeLogs] = []
    for node in nodes:
        files = []
        for file in node.files:
            earlier = by_path.setdefault(file.remote, [])
            if not earlier:
                earlier.append(("", node.node))  # the first copy: hashed when a second one comes
                files.append(file)
                continue
            if earlier[0][0] == "":
                first_node = earlier[0][1]
                first = next(f for n in out if n.node == first_node for f in n.files if f.remote == file.remote)
                earlier[0] = (_digest(first.local), first_node)
            digest = _digest(file.local)
            same = next((owner for seen, owner in earlier if seen == digest), None)
            if same is None:
                earlier.append((digest, node.node))
            files.append(file if same is None else replace(file, same_as=same))
        out.append(replace(node, files=tuple(files)))
    return out


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --- global ranks -----------------------------------------------------------------------------------------

# A server whose ranks are numbered across its nodes states its node rank in its printed arguments (the packs'
# `[[server_args]]` fact `node_rank`: SGLang's `server_args=ServerArgs(… nnodes=2, node_rank=1, …)`, whose node 1
# of --tp 16 --nnodes 2 logs TP8…TP15; docs/sglang reference §1.3). torchrun's agent logs `Rendezvous complete
# for workers. Result:` then `  group_rank=N` on a line of its own (torch 2.x elastic/agent/server/api.py): its
# workers' `[rankN]:` prefixes are global ranks.
_TORCHRUN_NODE_RANK = re.compile(
    r"Rendezvous complete for workers\. Result:(?:\n.*){0,6}?\n\s*group_rank=(\d+)\s*$", re.M
)
HEAD_BYTES = 1 << 20


def stated_node_rank(head: str, formats: Sequence[ServerArgsFormat] | None = None) -> int | None:
    """The node rank a log's head states (a server's printed arguments, torchrun's rendezvous result), if any.
    `formats`: the packs' server-argument formats (default the shipped ones)."""
    formats = shipped_server_args() if formats is None else formats
    for text in head.splitlines():
        printed = printed_args(text, formats)
        if printed is not None and (rank := read_int(printed.value("node_rank"), MAX_RANK)) is not None:
            return rank
    found = _TORCHRUN_NODE_RANK.search(head)
    return None if found is None else read_int(found.group(1), MAX_RANK)


def rank_naming(node_ranks: dict[str, int | None]) -> tuple[bool, str]:
    """Whether the nodes' ranks are the servers' own global numbers: every node that gave a log states its node
    rank, each a different one; else each rank is named by its node (`b:TP2`), as stacks names them."""
    if len(node_ranks) <= 1:
        return True, "one node's logs: ranks as its server names them"
    stated = {node: rank for node, rank in node_ranks.items() if rank is not None}
    if len(stated) == len(node_ranks) and len(set(stated.values())) == len(stated):
        listed = ", ".join(f"{node}={rank}" for node, rank in stated.items())
        return True, f"ranks as the servers number them across nodes (node ranks stated in the logs: {listed})"
    unstated = [node for node, rank in node_ranks.items() if rank is None]
    why = (
        f"no node rank stated in the logs of {', '.join(unstated[:8])}"
        if unstated
        else "two nodes state the same node rank"
    )
    return False, f"ranks named node:rank ({why})"


def _head(path: Path) -> str:
    with path.open("rb") as handle:
        return handle.read(HEAD_BYTES).decode("utf-8", "replace")


def named(collection: Collection) -> Collection:
    """The collection with its rank naming decided from the heads of its logs."""
    ranks: dict[str, int | None] = {}
    for node in collection.nodes:
        if node.judged:
            stated = (stated_node_rank(_head(f.local)) for f in node.judged)
            ranks[node.node] = next((rank for rank in stated if rank is not None), None)
    global_ranks, naming = rank_naming(ranks)
    return replace(collection, global_ranks=global_ranks, naming=naming)


def sources_of(collection: Collection, packs: PackSet) -> tuple[list[LogSource], Collection]:
    """The collected logs opened as `analyze` opens files (in one call: each source its own index), each named
    `node:path`, its ranks named by its node where the naming asks for it, its node's measured clock offset on
    it where the clocks differ beyond what the measure can tell (within it, the times are left as written); and
    the collection, its naming revised where a log's ranks turn out local (below)."""
    files = [(node, file) for node in collection.nodes for file in node.judged]
    sources = open_sources([str(file.local) for _, file in files], packs=packs)
    if collection.global_ranks and len({node.node for node, _ in files}) > 1 and any(map(local_labels, sources)):
        collection = replace(
            collection,
            global_ranks=False,
            naming="ranks named node:rank (a log's rank labels are local ranks: torchrun --tee's [defaultN]:)",
        )
    owners = {str(file.local): (node, file) for node, file in files}
    for source in sources:
        # an archive's members are named `archive:member` by the reader; a file is named by its path
        local = next(path for path in owners if source.name == path or source.name.startswith(f"{path}:"))
        node, file = owners[local]
        source.name = f"{node.node}:{file.remote}{source.name[len(local) :]}"
        source.rank_prefix = None if collection.global_ranks else f"{node.node}:"
        clock = node.clock
        source.clock_offset_s = clock.offset_s if clock is not None and clock.beyond_doubt else None
    return sources, collection


def local_labels(source: LogSource) -> bool:
    """Whether the source's rank labels come from a wrapper that counts local ranks (torchrun --tee's
    `[default3]:` is the node's local rank 3, whatever node rank the log states): not global names."""
    envelopes = source.envelopes
    if envelopes is None:
        return False
    return any(
        layer.rank_name == "local_rank" and envelopes.gives_rank(index) for index, layer in enumerate(envelopes.layers)
    )


# --- collecting -------------------------------------------------------------------------------------------


def collect_logs(
    transport: Transport,
    patterns: Sequence[str],
    folder: Path,
    *,
    timeout_s: float,
    parallel: int,
    budget: int = NODE_LOG_BYTES,
) -> Collection:
    """Every node's logs through `transport`, saved under `folder`: the files `patterns` name on each node (for
    Slurm: the job's output files where none is named; for Ray: its session's worker logs), or each pod's
    `kubectl logs`. Raises SnapshotError where the engine names no node at all (no such job, no pod)."""
    check_patterns(patterns)
    if isinstance(transport, KubernetesTransport):
        if patterns:
            nodes = _over_pods(transport, folder, timeout_s, parallel, budget, patterns)
        else:
            nodes = pod_logs(transport, folder, timeout_s=timeout_s, parallel=parallel, budget=budget)
        return named(Collection(transport.engine, tuple(nodes)))
    nonce = "logphase-" + secrets.token_hex(8)
    if isinstance(transport, SlurmTransport):
        return named(Collection(transport.engine, tuple(slurm_logs(transport, patterns, folder, nonce, timeout_s))))
    if isinstance(transport, RayTransport):
        scoped = [(ANY_NODE, p) for p in patterns or RAY_SESSION_LOGS]
    elif isinstance(transport, SshTransport):
        if not patterns:
            raise UsageError("--hosts needs the log's path on each host", hint="--log-path /var/log/sglang/*.log")
        scoped = [(ANY_NODE, p) for p in patterns]
    else:
        scoped = [(ANY_NODE, p) for p in patterns]
    command = log_command(nonce, scoped, budget)
    runs = transport.run(command, timeout_s=timeout_s, parallel=parallel, limit=budget + _FRAMING_BYTES, cut=True)
    nodes = [node_logs(run, nonce, transport.engine, folder) for run in runs]
    return named(Collection(transport.engine, tuple(shared_files(nodes))))


def _over_pods(
    transport: KubernetesTransport, folder: Path, timeout_s: float, parallel: int, budget: int, patterns: Sequence[str]
) -> list[NodeLogs]:
    """Files inside each pod (`kubectl exec POD -- sh -c …`), where --log-path names them."""
    nonce = "logphase-" + secrets.token_hex(8)
    command = log_command(nonce, [(ANY_NODE, p) for p in patterns], budget)
    runs = transport.run(command, timeout_s=timeout_s, parallel=parallel, limit=budget + _FRAMING_BYTES, cut=True)
    return shared_files([node_logs(run, nonce, transport.engine, folder) for run in runs])


def pod_logs(
    transport: KubernetesTransport, folder: Path, *, timeout_s: float, parallel: int, budget: int
) -> list[NodeLogs]:
    """Each running pod's `kubectl logs --timestamps --prefix` (the runtime's stamp and the pod's name on each
    line), and the pod's clock from `kubectl exec POD -- date +%s.%N` (none where exec is refused: said)."""
    pods = transport.pods(timeout_s=timeout_s)
    scope = ["-n", transport.namespace] if transport.namespace else []
    container = ["-c", transport.container] if transport.container else []

    def one(pod: str) -> NodeLogs:
        clock_run = run_local(pod, transport.argv(pod, ["date", "+%s.%N"]), timeout_s=timeout_s)
        argv = [transport.kubectl, "logs", pod, *scope, *container, "--timestamps", "--prefix"]
        run = kube.explain(run_local(pod, argv, timeout_s=timeout_s, limit=budget, cut=True))
        clock, notes = None, []
        try:
            clock = clock_offset(clock_run, float(clock_run.stdout.split()[0]))
        except (ValueError, IndexError):
            said = kube.explain(clock_run).failure or last_words(clock_run.stderr) or "no answer"
            notes.append(f"clock not measured (kubectl exec date: {said})")
        if run.failure is not None and not run.stdout:
            return NodeLogs(pod, transport.engine, (), clock, run.failure, tuple(notes))
        if not run.stdout.strip():
            return NodeLogs(pod, transport.engine, (), clock, "no log: kubectl logs printed nothing", tuple(notes))
        if run.cut:
            notes.append(f"its log passed {budget >> 20} MB: the rest not read")
        saved = _save(folder, pod, [(f"kubectl logs {pod}", len(run.stdout), run.stdout, 0, None)], clock)
        return NodeLogs(pod, transport.engine, tuple(saved), clock, None, tuple(notes))

    with ThreadPoolExecutor(max_workers=max(1, min(parallel, len(pods))), thread_name_prefix="pod") as pool:
        return list(pool.map(one, pods))


# --- Slurm: the job's own output files --------------------------------------------------------------------

_JOB_FIELD = re.compile(
    r"(?:^|\s)(StdOut|StdErr|BatchHost|NodeList|JobName|UserId|ArrayJobId|ArrayTaskId|JobState)=(\S*)"
)
_SLURM_PATTERN = re.compile(r"%(\d*)([%AajJNnstux])")


@dataclass(frozen=True)
class SlurmJob:
    """What `scontrol show job -o` says of a job's output."""

    job: str
    fields: dict[str, str]

    def get(self, key: str) -> str:
        return self.fields.get(key, "")


def read_job(job: str, text: str) -> SlurmJob:
    return SlurmJob(job, {m.group(1): m.group(2) for m in _JOB_FIELD.finditer(text)})


def expand(pattern: str, job: SlurmJob, node: str | None, node_index: int | None) -> str:
    """A Slurm file name pattern (sbatch(1) "filename pattern") as Slurm expands it for `node`: %j the job, %N the
    node, %n its index in the job, %u the user, %x the job's name, %A/%a the array's, %% a %. %t (a task) and %s
    (a step) stand for every one (`*`): the files of all of them on the node."""

    def one(found: re.Match[str]) -> str:
        width, letter = found.group(1), found.group(2)

        def number(value: str) -> str:  # %5j: padded with zeros
            return value.zfill(int(width)) if width else value

        array = job.get("ArrayJobId")
        values = {
            "%": "%",
            "j": number(job.job),
            "J": number(job.job),
            "A": number(array or job.job),
            "a": number(job.get("ArrayTaskId") if array else "4294967294"),
            "u": job.get("UserId").split("(")[0],
            "x": job.get("JobName"),
            "N": node if node is not None else "*",
            "n": number(str(node_index)) if node_index is not None else "*",
            "t": "*",
            "s": "*",
        }
        return values[letter]

    return _SLURM_PATTERN.sub(one, pattern)


def slurm_logs(
    transport: SlurmTransport, patterns: Sequence[str], folder: Path, nonce: str, timeout_s: float
) -> list[NodeLogs]:
    """The job's output files (StdOut, StdErr unless the same; or the files `patterns` name), expanded for each
    node, read in one step of the job on the nodes that hold them: a name with %N or %n on each node, any
    other on the batch host (it wrote the batch output; a file system shared with it holds the rest). A job
    that ended (`scontrol` still knows it for a while) is read here."""
    shown = run_local("scontrol", ["scontrol", "show", "job", "-o", transport.job], timeout_s=timeout_s)
    if shown.failure is not None or shown.returncode != 0:
        said = shown.failure or last_words(shown.stderr)
        raise SnapshotError(f"no such job: Slurm knows no job {transport.job} ({said})", hint="see `squeue --me`")
    job = read_job(transport.job, shown.stdout.decode("utf-8", "replace"))
    wanted = list(patterns) or list(dict.fromkeys(p for p in (job.get("StdOut"), job.get("StdErr")) if p))
    if not wanted:
        raise SnapshotError(f"job {transport.job} names no output file", hint="give it with --log-path")
    if job.get("JobState") not in ("RUNNING", "PENDING", "SUSPENDED", "CONFIGURING", ""):
        # a job that ended has no node to step into: its output is read here, where a file system shared with
        # its nodes (a login node's) holds it, or said missing
        ended = [(ANY_NODE, expand(pattern, job, None, None)) for pattern in wanted]
        run = run_local(
            "here",
            log_command(nonce, ended, NODE_LOG_BYTES),
            timeout_s=timeout_s,
            cut=True,
            limit=NODE_LOG_BYTES + _FRAMING_BYTES,
        )
        here = node_logs(run, nonce, transport.engine, folder)
        said = f"job {transport.job} is {job.get('JobState').lower()}: its output read on this machine"
        return [replace(here, notes=(said, *here.notes))]
    nodes = transport.nodes(timeout_s=timeout_s)
    batch = job.get("BatchHost") or nodes[0]
    scoped: list[tuple[str, str]] = []
    holding: list[str] = []
    for pattern in wanted:
        per_node = re.search(r"%\d*[Nn]", pattern) is not None
        for index, node in enumerate(nodes):
            if per_node or node == batch:
                scoped.append((node, expand(pattern, job, node, index)))
                holding.append(node)
    holding = [n for n in nodes if n in holding]
    step = replace(transport, nodelist=tuple(holding))
    command = log_command(nonce, scoped, NODE_LOG_BYTES)
    run = run_local(
        f"job {transport.job}",
        step.argv(holding, command),
        timeout_s=timeout_s,
        limit=(NODE_LOG_BYTES + _FRAMING_BYTES) * len(holding),
        cut=True,
    )
    return [node_logs(per_task, nonce, transport.engine, folder) for per_task in split_lines_by_label(run, holding)]
