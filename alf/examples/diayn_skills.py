"""Play each DIAYN skill of a trained run, measure how well its discriminator tells them
apart, and plot the skills' trajectories (x, y) on a 2-D task such as ``PointMass-v0``.

    python -m alf.examples.diayn_skills --root_dir ~/runs/diayn_point --png /tmp/skills.png

Each skill ``k`` is played for ``--episodes`` episodes with the deterministic policy
(``RandomCategoricalGoalGenerator.set_fixed_goal(k)``); a skill's accuracy is the fraction
of the states it visits (every step after the first) that the discriminator
:math:`q_\\phi(z|s)` assigns to ``k``. Prints ``{"accuracy": [...], "K": K}`` as JSON.
"""

from __future__ import annotations

import argparse
import json

import torch

from alf.data_structures import StepType


@torch.no_grad()
def play_skills(agent, env, num_episodes: int = 1) -> torch.Tensor:
    """The observations ``[K, num_episodes * B, T, ...]`` visited by each skill of an
    ``AgentAlgorithm`` with a ``RandomCategoricalGoalGenerator`` (after each reset; every
    episode must last ``T`` steps)."""
    generator, was_training = agent.goal_generator, agent.training
    agent.eval()
    skills = []
    try:
        for k in range(generator.num_of_goals):
            generator.set_fixed_goal(k)
            episodes = []
            for _ in range(num_episodes):
                time_step = env.reset()
                state = agent.get_initial_predict_state(env.batch_size)
                visited = []
                while True:
                    step = agent.predict_step(time_step, state)
                    state = step.state
                    time_step = env.step(step.output)
                    visited.append(time_step.observation)
                    if bool((time_step.step_type == StepType.LAST).all()):
                        break
                episodes.append(torch.stack(visited, 1))
            skills.append(torch.cat(episodes))
    finally:
        generator.set_fixed_goal(None)
        agent.train(was_training)
    return torch.stack(skills)


@torch.no_grad()
def skill_accuracy(agent, observations: torch.Tensor) -> list[float]:
    """Per skill ``k``, the fraction of its states ``observations[k]`` that the agent's
    DIAYN discriminator classifies as ``k``."""
    discriminator = agent.intrinsic_reward_module
    accuracy = []
    for k, states in enumerate(observations):
        logits = discriminator.discriminate(states.flatten(0, -2).float())
        accuracy.append(float((logits.argmax(-1) == k).float().mean()))
    return accuracy


def plot_skills(observations: torch.Tensor, accuracy: list[float], png: str) -> None:
    """Save the trajectories ``observations[k, episode, t, :2]`` of every skill to ``png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 5))
    colors = plt.get_cmap("tab10")
    for k, episodes in enumerate(observations):
        for i, path in enumerate(episodes):
            label = f"skill {k} ({accuracy[k]:.2f})" if i == 0 else None
            xy = torch.cat([torch.zeros(1, 2), path[:, :2].float()]).numpy()
            ax.plot(xy[:, 0], xy[:, 1], color=colors(k % 10), label=label, alpha=0.8)
    ax.set(xlim=(-1.05, 1.05), ylim=(-1.05, 1.05), aspect="equal", xlabel="x", ylabel="y")
    ax.set_title("DIAYN skills (discriminator accuracy)")
    ax.legend(fontsize=7, loc="lower right")
    fig.savefig(png, dpi=100, bbox_inches="tight")
    plt.close(fig)


def main(argv=None) -> dict:
    from alf.bin.play import build_experiment, load_checkpoint

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root_dir", required=True, help="a trained DIAYN run")
    parser.add_argument("--png", required=True, help="where to save the plot")
    parser.add_argument("--episodes", type=int, default=3, help="episodes per skill")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    env, agent = build_experiment(args.root_dir, seed=args.seed)
    try:
        agent.load_state_dict(load_checkpoint(args.root_dir)["algorithm"])
        observations = play_skills(agent, env, args.episodes)
    finally:
        env.close()
    accuracy = skill_accuracy(agent, observations)
    plot_skills(observations, accuracy, args.png)
    result = {"K": len(accuracy), "accuracy": [round(a, 4) for a in accuracy]}
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
