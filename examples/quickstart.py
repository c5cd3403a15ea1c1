"""Play one P4G-hard episode with the scripted persuader and print what happened.

Run: ``python examples/quickstart.py [--seed 0] [--encoder hashing]``
"""

from __future__ import annotations

import argparse

import dialogue_gym
from dialogue_gym.evaluation.agents import make_agent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--agent", default="scripted")
    parser.add_argument("--encoder", default=None, help="e.g. hashing (fast) or minilm")
    args = parser.parse_args()

    env_kwargs = {} if args.encoder is None else {"encoder": args.encoder}
    env = dialogue_gym.make("P4G-hard", privileged=True, render_mode="ansi", **env_kwargs)
    agent = make_agent(args.agent, card=env.card)
    obs, infos = env.reset(seed=args.seed)
    agent.reset(seed=args.seed)
    while env.agents:
        obs, rewards, _, _, infos = env.step({"system": agent.act(obs["system"])})
        info = infos["system"]
        print(
            f"exchange {info['exchange']}: r_S={rewards['system']:+.3f} s={info['s']:.3f} "
            f"label={info['success_label']} votes={info['judge_votes']} q={info['q']:+d}"
        )
    print(env.render())
    episode = infos["system"]["episode"]
    print(f"success={episode['success']} at exchange {episode['success_turn']}")
    print("hidden concerns:", infos["system"]["privileged"]["concerns"])


if __name__ == "__main__":
    main()
