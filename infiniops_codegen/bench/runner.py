"""Interleaved timing across long-lived worker processes.

Two processes (worker.PROCESSES): the reference, the after build and the
floor share one, with one set of tensors; the before build has its own (both
builds are named `infiniops`, and an extension module loads once per
process). The parent asks for one short timed batch of each variant in turn,
so the batches run in wall-clock order reference, before, after, floor, then
floor, after, before, reference, ... and slow drifts of the (shared, noisy)
machine hit every variant of a round alike. Each round gives one per-call time per
variant; report.py takes medians and paired comparisons over the rounds.
"""

from __future__ import annotations

import multiprocessing
import statistics
import time
from dataclasses import dataclass

from . import worker
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


class Worker:
    """One worker process hosting some roles (worker.PROCESSES)."""

    def __init__(self, roles: tuple[str, ...], params: dict):
        self.roles = roles
        self.params = params
        self.state: dict = {}
        self._start()

    def _start(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(
            target=worker.main,
            args=(child, self.roles, self.params),
            daemon=True,
            name=f"bench-{'-'.join(self.roles)}",
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
            raise WorkerDied(
                f"the {'/'.join(self.roles)} worker died (exit code {code})"
            )
        if status != "ok":
            raise WorkerError(f"{'/'.join(self.roles)}: {value}")
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
    samples: dict[str, list[float]] | None = None  # role -> ns per call, per round
    calls_per_batch: int = 0
    reps: int = 0
    match: dict[str, bool] | None = None
    reference_call: str = ""
    error: str = ""


class Runner:
    def __init__(self, params: dict, plan: Plan):
        self.plan = plan
        self.workers = [Worker(roles, params) for roles in worker.PROCESSES]
        for w in self.workers:  # they import torch in parallel
            w.wait_started()
        self.host = {role: w for w in self.workers for role in w.roles}
        self.states = {k: v for w in self.workers for k, v in w.state.items()}

    def close(self) -> None:
        for w in self.workers:
            w.close()

    def run(self, config: Config, entry: dict) -> Outcome:
        try:
            return self._run(config, entry)
        except WorkerError as e:
            return Outcome(config, error=str(e))
        except WorkerDied as e:
            for w in self.workers:
                if not w.proc.is_alive():
                    w.restart()
            return Outcome(config, error=str(e))

    def _time(self, role: str, n: int, warm: bool) -> int:
        return self.host[role].request("time", role, n, warm)

    def _run(self, config: Config, entry: dict) -> Outcome:
        # Setup in parallel: every process makes the same tensors.
        for w in self.workers:
            w.send("setup", config, entry)
        infos, errors, died = {}, [], None
        for w in self.workers:  # every reply is read, whatever happened
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
        roles = worker.ROLES
        per_call = max(
            self.host[r].request("calibrate", r, plan.calibrate_ns) for r in roles
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
            samples=samples,
            calls_per_batch=n,
            reps=reps,
            match={r: i["match"] for r, i in infos.items() if r != "reference"},
            reference_call=infos["reference"]["call"],
        )


def run_all(
    configs, entries: dict, params, plan: Plan, echo
) -> tuple[list[Outcome], dict[str, dict]]:
    """Time every configuration; echo one line each. Also returns each
    worker's module state (handle reuse, direct mode)."""
    runner = Runner(params, plan)
    states = runner.states
    outcomes = []
    start = time.perf_counter()
    try:
        for i, config in enumerate(configs, 1):
            outcome = runner.run(config, entries[config.op])
            outcomes.append(outcome)
            echo(_progress_line(i, len(configs), outcome, time.perf_counter() - start))
    finally:
        runner.close()
    return outcomes, states


def _progress_line(i: int, total: int, o: Outcome, elapsed: float) -> str:
    head = f"[{i}/{total} {elapsed:5.0f}s] {o.config.id}"
    if o.error:
        return f"{head}: skipped ({o.error})"
    s = o.samples
    m = {r: statistics.median(v) for r, v in s.items()}
    ratio = statistics.median(r / a for r, a in zip(s["reference"], s["after"]))
    return (
        f"{head}: ref {_us(m['reference'])}  before {_us(m['before'])}  "
        f"after {_us(m['after'])}  floor {_us(m['floor'])}  ratio {ratio:.2f}x"
    )


def _us(ns: float) -> str:
    return f"{ns / 1000:.2f}us" if ns < 1e7 else f"{ns / 1e6:.1f}ms"
