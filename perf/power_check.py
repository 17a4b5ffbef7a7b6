"""The minimum detectable effect (the tables' ``mde`` column) beside a simulation of the same
design, and ``evalpipe plan``'s answers fed back into the simulator.

Run: python perf/power_check.py [--sims 400] [--seed 0]

Part 1, per design (examples, typo draws per example, clean accuracy, discordance, share of
examples whose draws flip together): the simulated MDE (the smallest planted loss whose
simulated power, through :func:`evalpipe.scoring.intervals.paired_scores`, reaches 80%; bisection
with common random numbers) beside :func:`evalpipe.scoring.power.mde` fed what the simulated
tables print at that effect (pairs, discordance, mean design effect and df), and their relative
difference. Part 2: a large simulated pilot of a design, read by
:func:`evalpipe.scoring.power_plan.pilot_rates` as ``evalpipe plan --pilot`` reads a pairs table,
the plan for a target loss, and the power the simulator finds at the planned size (Monte Carlo
standard error ``sqrt(0.8 * 0.2 / sims)``, 0.020 at 400). Nothing is asserted; the figures go to
docs/scoring.md ("Power and the minimum detectable effect").
"""

from __future__ import annotations

import argparse

from evalpipe.scoring.power_plan import pilot_rates, plans
from evalpipe.scoring.simulate_power import (
    PowerDesign,
    check_mde,
    pilot_pairs,
    power_of_plan,
)

MDE_DESIGNS = [
    PowerDesign(20, 1, 0.6, 0.0),
    PowerDesign(20, 1, 0.6, 0.1),
    PowerDesign(40, 1, 0.6, 0.1),
    PowerDesign(100, 1, 0.6, 0.15),
    PowerDesign(300, 1, 0.6, 0.1),
    PowerDesign(1000, 1, 0.8, 0.05),
    PowerDesign(20, 5, 0.6, 0.15, shared=0.3),
    PowerDesign(40, 3, 0.6, 0.1, shared=0.5),
    PowerDesign(80, 3, 0.6, 0.1, shared=0.5),
    PowerDesign(300, 4, 0.7, 0.2, shared=0.2),
]
PLAN_CASES = [  # (pilot design, target loss, draws planned)
    (PowerDesign(2000, 1, 0.6, 0.15), -0.05, 1),
    (PowerDesign(2000, 1, 0.6, 0.1), -0.02, 1),
    (PowerDesign(2000, 3, 0.6, 0.1, shared=0.3), -0.05, 3),
    (PowerDesign(1000, 4, 0.7, 0.2, shared=0.5), -0.1, 2),
    (PowerDesign(1000, 4, 0.7, 0.2, shared=0.5), -0.05, 8),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    print(f"MDE at 80% power, level 0.95: formula vs simulation ({args.sims} simulations)")
    print(
        f"{'examples':>8} {'draws':>5} {'acc':>5} {'disc.':>6} {'shared':>6} {'deff':>6} "
        f"{'df':>6} {'simulated':>10} {'formula':>8} {'rel. diff':>9}"
    )
    for design in MDE_DESIGNS:
        check = check_mde(design, sims=args.sims, seed=args.seed)
        formula = "none" if check.formula is None else f"{check.formula:.4f}"
        print(
            f"{design.examples:>8} {design.draws:>5} {design.accuracy:>5.2f} "
            f"{design.discordance:>6.2f} {design.shared:>6.2f} {check.design_effect:>6.3f} "
            f"{check.df:>6.1f} {check.simulated:>10.4f} {formula:>8} "
            f"{check.relative_error:>9.1%}"
        )
    print()
    print(f"evalpipe plan fed back: simulated power at the planned size ({args.sims} simulations)")
    print(
        f"{'pilot':>6} {'draws':>5} {'shared':>6} {'effect':>7} {'icc':>6} {'plan draws':>10} "
        f"{'examples':>8} {'power (formula)':>15} {'power (simulated)':>17}"
    )
    for truth, effect, draws in PLAN_CASES:
        rates = pilot_rates(pilot_pairs(truth, effect, seed=args.seed + 1))[0]
        plan = plans(rates, effect=effect, draws=[draws], level=0.95, target_power=0.8)[0]
        planned = PowerDesign(
            plan.examples, draws, truth.accuracy, truth.discordance, truth.shared, truth.level
        )
        simulated = power_of_plan(planned, effect, sims=args.sims, seed=args.seed + 2)
        print(
            f"{truth.examples:>6} {truth.draws:>5} {truth.shared:>6.2f} {effect:>7.2f} "
            f"{rates.icc:>6.3f} {draws:>10} {plan.examples:>8} {plan.power:>15.3f} "
            f"{simulated:>17.3f}"
        )


if __name__ == "__main__":
    main()
