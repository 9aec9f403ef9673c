"""MILP backends by name, behind one status vocabulary: optimal | feasible | infeasible | timeout | error.

PuLP is the modelling layer. HiGHS (through highspy, with a warm start) is the default;
CBC (bundled with PuLP) is the classic choice; OR-Tools CP-SAT gets the same PuLP model
translated to integers. Each backend maps its own statuses once, here.

Besides seconds, a solve can be bounded by work (`nodes`: branch-and-bound nodes for HiGHS and
CBC, deterministic time for CP-SAT), which does not depend on how busy the machine is: the same model and
limits give the same answer anywhere. A solver stopped by either limit answers `timeout`.
"""

from __future__ import annotations

import math
import os
import shlex
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any as AnyType
from typing import cast

import pulp

from rdl.registry import Registry

STATUSES = ("optimal", "feasible", "infeasible", "timeout", "error")
CP_SAT_SCALE = 10_000  # objective weights are scaled to integers for CP-SAT
NODE_WORK = 0.1  # CP-SAT has no branch-and-bound nodes: a node limit bounds its deterministic time, this much per node


@dataclass(frozen=True, slots=True)
class SolveResult:
    """What a backend reports: status, objective (None without a solution), best bound, relative gap, time."""

    backend: str
    status: str
    objective: float | None
    bound: float | None
    gap: float | None
    seconds: float

    @property
    def has_solution(self) -> bool:
        return self.objective is not None and self.status in ("optimal", "feasible", "timeout")


Backend = Callable[[pulp.LpProblem, float, float, bool], SolveResult]
Clock = Callable[[], float]  # seconds on some clock; the wall clock (`time.perf_counter`) unless a test injects one


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    if objective is None or bound is None or math.isinf(bound):
        return None
    return abs(bound - objective) / max(abs(objective), 1e-9)


def solve_highs(problem: pulp.LpProblem, time_limit: float, gap: float, warm: bool,
                presolve: str = "on", nodes: int | None = None) -> SolveResult:
    """HiGHS through highspy; starts from the variables' current values when `warm`; at most `nodes` nodes."""
    import highspy

    deadline = time.perf_counter() + time_limit

    class WarmHiGHS(pulp.HiGHS):  # type: ignore[misc,name-defined]
        def callSolver(self, lp: pulp.LpProblem) -> None:
            # Handing the model to HiGHS takes time too: the solver gets what is left of the limit.
            lp.solverModel.setOptionValue("time_limit", max(0.05, deadline - time.perf_counter()))
            if nodes is not None:
                lp.solverModel.setOptionValue("mip_max_nodes", int(nodes))
            if warm:
                solution = highspy.HighsSolution()
                solution.col_value = [v.varValue if v.varValue is not None else 0.0 for v in lp.variables()]
                solution.value_valid = True
                lp.solverModel.setSolution(solution)
            lp.solverModel.run()

        def findSolutionValues(self, lp: pulp.LpProblem) -> AnyType:
            try:
                return super().findSolutionValues(lp)
            except KeyError:  # a status PuLP 3.3 does not map (the node limit's); the values are read by then
                return pulp.LpStatusNotSolved, pulp.LpSolutionIntegerFeasible

    solver = WarmHiGHS(msg=False, timeLimit=time_limit, gapRel=gap, presolve=presolve, threads=1)
    started = time.perf_counter()
    try:
        problem.solve(solver)
    except Exception:  # a solver crash is an answer too: "error", and the caller keeps its greedy plan
        return SolveResult("highs", "error", None, None, None, time.perf_counter() - started)
    seconds = time.perf_counter() - started
    highs = problem.solverModel
    model_status = highs.modelStatusToString(highs.getModelStatus()).lower()
    info = highs.getInfo()
    has_solution = info.primal_solution_status == 2  # kSolutionStatusFeasible
    objective = pulp.value(problem.objective) if has_solution else None
    bound = objective
    if problem.isMIP():
        bound = info.mip_dual_bound
        if problem.sense == pulp.LpMaximize:
            bound = -bound  # PuLP hands HiGHS a minimisation of the negated objective
        bound += problem.objective.constant or 0.0  # the constant term never reaches HiGHS
    if bound is not None and math.isinf(bound):
        bound = None  # no bound proven yet
    if "optimal" in model_status:
        status = "optimal"
    elif "unbounded" in model_status:
        status = "error"  # "infeasible or unbounded" is no proof of infeasibility; our models are bounded
    elif "infeasible" in model_status:
        status = "infeasible"
    elif "limit" in model_status:  # time, iteration or node (HiGHS: "solution") limit: out of its budget
        status = "timeout"
    elif has_solution:
        status = "feasible"
    else:
        status = "error"
    return SolveResult("highs", status, objective, bound, relative_gap(objective, bound), seconds)


def solve_cbc(problem: pulp.LpProblem, time_limit: float, gap: float, warm: bool,
              nodes: int | None = None) -> SolveResult:
    """CBC as bundled with PuLP. Its own limit covers the search only (on a large model its presolve and root LP
    alone ran for minutes), so it searches for half the time and is killed when the whole of it is up."""
    search = max(1, math.floor(time_limit / 2))
    with tempfile.TemporaryDirectory(prefix="rayon-cbc-") as folder:
        solver = pulp.COIN_CMD(path=_cbc_within(time_limit, folder), msg=False, timeLimit=search, gapRel=gap,
                               warmStart=warm, threads=1, maxNodes=nodes)
        solver.tmpDir = folder  # PuLP's model and solution files too: removed even when CBC is killed
        return _run_cbc(problem, solver, search)


def _cbc_within(seconds: float, folder: str) -> str:
    """The bundled CBC, behind a wrapper that kills it after `seconds` (coreutils `timeout`; without it, or where
    the wrapper cannot be run, unbounded)."""
    cbc = pulp.PULP_CBC_CMD(msg=False).path
    stopper = shutil.which("timeout")
    if stopper is None:
        return str(cbc)
    wrapper = os.path.join(folder, "cbc")
    with open(wrapper, "w", encoding="utf-8") as out:
        kill = f"{shlex.quote(stopper)} --foreground -s KILL {max(0.1, seconds):.2f}"
        out.write(f'#!/bin/sh\nexec {kill} {shlex.quote(cbc)} "$@"\n')
    os.chmod(wrapper, 0o700)
    return wrapper if os.access(wrapper, os.X_OK) else str(cbc)  # a `noexec` temp folder: unbounded, as CBC is


def _run_cbc(problem: pulp.LpProblem, solver: pulp.LpSolver, search: float) -> SolveResult:
    started = time.perf_counter()
    try:
        code = problem.solve(solver)
    except (pulp.PulpSolverError, OSError):  # killed at the time limit, or failed
        seconds = time.perf_counter() - started
        return SolveResult("cbc", "timeout" if seconds >= search else "error", None, None, None, seconds)
    seconds = time.perf_counter() - started
    has_solution = problem.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible)
    objective = pulp.value(problem.objective) if has_solution else None
    if code == pulp.LpStatusOptimal and problem.sol_status == pulp.LpSolutionOptimal:
        status = "optimal"
    elif code == pulp.LpStatusInfeasible:
        status = "infeasible"
    elif has_solution:
        status = "timeout" if seconds >= search * 0.95 else "feasible"
    else:  # out of its search time without a solution is a timeout, not an error
        status = "timeout" if seconds >= search * 0.95 else "error"
    bound = objective if status == "optimal" else None
    return SolveResult("cbc", status, objective, bound, relative_gap(objective, bound), seconds)


def solve_cpsat(problem: pulp.LpProblem, time_limit: float, gap: float, warm: bool,
                nodes: int | None = None) -> SolveResult:
    """OR-Tools CP-SAT on the PuLP model translated to integers (continuous variables must be integral); `nodes`
    bounds its deterministic time (`NODE_WORK` per node: it has no branch-and-bound nodes)."""
    from ortools.sat.python import cp_model

    started = time.perf_counter()
    model = cp_model.CpModel()
    variables = problem.variables()
    index = {v.name: i for i, v in enumerate(variables)}
    cp_vars = []
    for v in variables:
        low = math.ceil(v.lowBound) if v.lowBound is not None else -(2**40)
        high = math.floor(v.upBound) if v.upBound is not None else 2**40
        cp_vars.append(model.new_int_var(low, high, v.name))
        if warm and v.varValue is not None:
            model.add_hint(cp_vars[-1], round(v.varValue))
    for constraint in problem.constraints():
        coefficients = {index[var.name]: coef for var, coef in constraint.items()}
        scale = _integer_scale([*coefficients.values(), constraint.constant])
        expr = sum(round(coef * scale) * cp_vars[i] for i, coef in coefficients.items())
        rhs = -round(constraint.constant * scale)
        if constraint.sense == pulp.LpConstraintEQ:
            model.add(expr == rhs)
        elif constraint.sense == pulp.LpConstraintLE:
            model.add(expr <= rhs)
        else:
            model.add(expr >= rhs)
    objective = sum(round(coef * CP_SAT_SCALE) * cp_vars[index[var.name]] for var, coef in problem.objective.items())
    if problem.sense == pulp.LpMaximize:
        model.maximize(objective)
    else:
        model.minimize(objective)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.05, float(time_limit) - (time.perf_counter() - started))
    solver.parameters.relative_gap_limit = float(gap)
    solver.parameters.num_workers = 2
    if nodes is not None:
        solver.parameters.max_deterministic_time = NODE_WORK * max(1, nodes)
    code = solver.solve(model)
    seconds = time.perf_counter() - started
    status = {cp_model.OPTIMAL: "optimal", cp_model.FEASIBLE: "feasible", cp_model.INFEASIBLE: "infeasible",
              cp_model.MODEL_INVALID: "error"}.get(code, "timeout")
    if status == "feasible" and seconds >= time_limit * 0.95:
        status = "timeout"
    if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        for v, cp_var in zip(variables, cp_vars, strict=True):
            v.varValue = float(solver.value(cp_var))
        value = pulp.value(problem.objective)
        bound = solver.best_objective_bound / CP_SAT_SCALE + (problem.objective.constant or 0.0)
        return SolveResult("cpsat", status, value, bound, relative_gap(value, bound), seconds)
    return SolveResult("cpsat", status, None, None, None, seconds)


def _integer_scale(values: list[float]) -> int:
    """The least power of two (up to 2**20) that makes every value whole."""
    scale = 1
    while scale < 2**20 and any(abs(v * scale - round(v * scale)) > 1e-9 for v in values):
        scale *= 2
    return scale


BACKENDS: Registry[Backend] = Registry.of("solver", {"highs": solve_highs, "cbc": solve_cbc, "cpsat": solve_cpsat})
DEFAULT_BACKEND = "highs"


def get_backend(name: str) -> Backend:
    """The backend of that name; an unknown name is an `UnknownName` listing the valid ones."""
    return BACKENDS.get(name)


def bounded(backend: Backend, nodes: int | None) -> Backend:
    """`backend` stopping after `nodes` nodes too (None: seconds only; every backend registered here takes `nodes`)."""
    return backend if nodes is None else partial(cast(AnyType, backend), nodes=nodes)


def confirm_infeasible(problem: pulp.LpProblem, time_limit: float) -> bool:
    """Whether an "infeasible" survives a second opinion: HiGHS without presolve, then CBC.

    HiGHS 1.15.1 with presolve has called a feasible reservation model infeasible
    (`shared/data/solver/`), so no rejection rests on one solver's word.
    """
    second = solve_highs(problem, time_limit, 0.0, warm=False, presolve="off")
    if second.status != "infeasible":
        return False
    return solve_cbc(problem, time_limit, 0.0, warm=False).status == "infeasible"
