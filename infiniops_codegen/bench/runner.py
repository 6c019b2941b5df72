"""Interleaved timing across long-lived worker processes.

Two processes (worker.PROCESSES): the reference, the after build (on every
path) and the floors share one, with one set of tensors; the before build has
its own (both builds have the project's name, and an extension module loads
once per process). The parent asks for one short timed batch of each variant
in turn, so the batches run in wall-clock order reference, before, then each
path next to its floor (native, floor_native, direct, floor_direct, ...), and
back in reverse order the next round: slow drifts of the (shared, noisy)
machine hit every variant of a round alike, and a path and its floor run
back to back. Each round gives one per-call time per variant; report.py
takes medians and paired comparisons over the rounds.

Which paths a configuration times (`timed_paths`): every path it can take in
the tiny family (where the overhead over the floor means something), only
the default path in the LLM family (kernel-bound: keeps the sweep short).
"""

from __future__ import annotations

import multiprocessing
import statistics
import time
from dataclasses import dataclass

from ..model.manifest import Op
from . import cases, worker
from . import paths as P
from .cases import Config


@dataclass(frozen=True)
class Plan:
    """How long to time each configuration."""

    batch_ns: int = 1_000_000  # target length of one timed batch
    budget_ns: int = 1_500_000_000  # timed batches of one config, all variants
    min_reps: int = 3  # rounds (one batch of each variant per round)
    max_reps: int = 41
    warmup_rounds: int = 1
    calibrate_ns: int = 1_000_000
    warm_below_ns: int = 5_000_000  # an untimed call before each shorter batch


FULL = Plan()
QUICK = Plan(batch_ns=500_000, budget_ns=300_000_000, max_reps=15, calibrate_ns=300_000)


class WorkerError(Exception):
    pass


class WorkerDied(Exception):
    pass


def timed_paths(
    config: Config, op: Op, device: str = "cpu"
) -> tuple[str, tuple[str, ...]]:
    """(the default path, the paths to time) of a configuration."""
    numel = cases.key_numel(config, op)
    default = P.default_path(op, config.dtype, numel, device)
    if config.family != "tiny":
        return default, (default,)
    return default, P.applicable(op, config.dtype, device)


def round_order(present: set[str], paths: tuple[str, ...]) -> list[str]:
    """The variants of one round: reference, the torch-API ones (worker.py),
    before, then each path followed by its floor (when it has one)."""
    order = ["reference", "torch_api", "api", "api_out", "before"]
    for p in paths:
        order += [p, worker.floor_role(p)]
    return [r for r in order if r in present]


class Worker:
    """One worker process (worker.PROCESSES)."""

    def __init__(self, kind: str, params: dict):
        self.kind = kind
        self.params = params
        self.state: dict = {}
        self._start()

    def _start(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(
            target=worker.main,
            args=(child, self.kind, self.params),
            daemon=True,
            name=f"bench-{self.kind}",
        )
        self.proc.start()
        child.close()
        self.started = False

    def wait_started(self) -> None:
        if not self.started:
            self.state = self.recv()
            self.started = True

    def restart(self) -> None:
        self.close()
        self._start()
        self.wait_started()

    def send(self, *request) -> None:
        self.conn.send(request)

    def recv(self):
        try:
            status, value = self.conn.recv()
        except (EOFError, ConnectionResetError):
            code = self.proc.exitcode
            raise WorkerDied(f"the {self.kind} worker died (exit code {code})")
        if status != "ok":
            raise WorkerError(f"{self.kind}: {value}")
        return value

    def request(self, *request):
        self.send(*request)
        return self.recv()

    def close(self) -> None:
        try:
            if self.proc.is_alive():
                self.conn.send(("close",))
                self.conn.recv()
        except (OSError, EOFError):
            pass
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()


@dataclass
class Outcome:
    config: Config
    default: str = ""  # the path of a plain call: the "after" variant
    paths: tuple[str, ...] = ()  # the paths timed
    samples: dict[str, list[float]] | None = None  # role -> ns per call, per round
    calls_per_batch: int = 0
    reps: int = 0
    match: dict[str, bool] | None = None
    calls: dict[str, str] | None = None  # role -> what it calls
    error: str = ""


class Runner:
    def __init__(self, params: dict, plan: Plan):
        self.plan = plan
        self.device = params.get("device", "cpu")
        self.workers = {kind: Worker(kind, params) for kind in worker.PROCESSES}
        for w in self.workers.values():  # they import torch in parallel
            w.wait_started()
        self.states = {k: v for w in self.workers.values() for k, v in w.state.items()}

    def _host(self, role: str) -> Worker:
        return self.workers[worker.BEFORE if role == "before" else worker.MAIN]

    def close(self) -> None:
        for w in self.workers.values():
            w.close()

    def run(self, config: Config, op: Op) -> Outcome:
        default, paths = timed_paths(config, op, self.device)
        try:
            return self._run(config, op, default, paths)
        except WorkerError as e:
            return Outcome(config, default, paths, error=str(e))
        except WorkerDied as e:
            for w in self.workers.values():
                if not w.proc.is_alive():
                    w.restart()
            return Outcome(config, default, paths, error=str(e))

    def _time(self, role: str, n: int, warm: bool) -> int:
        return self._host(role).request("time", role, n, warm)

    def _run(self, config: Config, op: Op, default: str, paths) -> Outcome:
        # Setup in parallel: every process makes the same tensors.
        for w in self.workers.values():
            w.send("setup", config, op, paths, default)
        infos, errors, died = {}, [], None
        for w in self.workers.values():  # every reply is read, whatever happened
            try:
                infos.update(w.recv())
            except WorkerError as e:
                errors.append(str(e))
            except WorkerDied as e:
                died = e
        if died:
            raise died
        if errors:
            raise WorkerError("; ".join(errors))
        plan = self.plan
        roles = round_order(set(infos), paths)
        per_call = max(
            self._host(r).request("calibrate", r, plan.calibrate_ns) for r in roles
        )
        n = max(1, int(plan.batch_ns / per_call))
        reps = int(plan.budget_ns / (len(roles) * n * per_call))
        reps = min(plan.max_reps, max(plan.min_reps, reps))
        # Below warm_below_ns a call's data may fit in cache, and the batch
        # before (another variant, maybe another process) has evicted it.
        warm = per_call < plan.warm_below_ns
        for _ in range(plan.warmup_rounds):
            for r in roles:
                self._time(r, n, warm)
        samples: dict[str, list[float]] = {r: [] for r in roles}
        for i in range(reps):
            # A B C D, D C B A, ...: a drift within a round evens out.
            for r in roles if i % 2 == 0 else roles[::-1]:
                samples[r].append(self._time(r, n, warm) / n)
        return Outcome(
            config,
            default,
            paths,
            samples=samples,
            calls_per_batch=n,
            reps=reps,
            match={r: i["match"] for r, i in infos.items() if r != "reference"},
            calls={r: i["call"] for r, i in infos.items()},
        )


def run_all(
    configs, ops: dict, params, plan: Plan, echo, verbose: bool = False
) -> tuple[list[Outcome], dict[str, dict]]:
    """Time every configuration; echo one line each (verbose: with each
    path's overhead over its floor). Also returns each worker's module state
    (handle reuse, direct mode)."""
    runner = Runner(params, plan)
    states = runner.states
    outcomes = []
    start = time.perf_counter()
    try:
        for i, config in enumerate(configs, 1):
            outcome = runner.run(config, ops[config.op])
            outcomes.append(outcome)
            elapsed = time.perf_counter() - start
            echo(_progress_line(i, len(configs), outcome, elapsed, verbose))
    finally:
        runner.close()
    return outcomes, states


def _progress_line(
    i: int, total: int, o: Outcome, elapsed: float, verbose: bool
) -> str:
    head = f"[{i}/{total} {elapsed:5.0f}s] {o.config.id}"
    if o.error:
        return f"{head}: FAILED ({o.error})"
    s = o.samples
    m = {r: statistics.median(v) for r, v in s.items()}
    after = o.default
    ratio = statistics.median(r / a for r, a in zip(s["reference"], s[after]))
    line = (
        f"{head}: ref {_us(m['reference'])}  before {_us(m['before'])}  "
        f"after ({after}) {_us(m[after])}  ratio {ratio:.2f}x"
    )
    bad = sorted(r for r, ok in (o.match or {}).items() if not ok)
    if bad:
        line += f"  OUTPUTS DIFFER: {', '.join(bad)}"
    over = []
    for p in o.paths:
        f = worker.floor_role(p)
        if f in s and (verbose or p == after):
            d = statistics.median(x - y for x, y in zip(s[p], s[f]))
            over.append(f"{p} {d:+.0f}")
    if over:
        line += "  over floor (ns): " + ", ".join(over)
    return line


def _us(ns: float) -> str:
    return f"{ns / 1000:.2f}us" if ns < 1e7 else f"{ns / 1e6:.1f}ms"
