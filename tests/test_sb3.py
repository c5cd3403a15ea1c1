"""stable-baselines3 trains on the Gymnasium views: PPO("MlpPolicy", env).learn(...) on a lone
view from gymnasium.make and on SB3's own make_vec_env over the registered id."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import dialogue_gym  # noqa: F401  (registers the views)

sb3 = pytest.importorskip("stable_baselines3")
torch = pytest.importorskip("torch")

from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.env_util import make_vec_env  # noqa: E402

ENV = "dialogue_gym/P4G-hard-Strategy-v0"
FAST = {"encoder": "hashing"}


@pytest.fixture(autouse=True)
def one_torch_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_ppo_learns_on_sb3_make_vec_env():
    with pytest.warns(UserWarning, match="rgb_array"):  # SB3 asks for it; dropped, said once
        vec = make_vec_env(ENV, n_envs=4, seed=0, env_kwargs=FAST)
    model = PPO("MlpPolicy", vec, n_steps=256, batch_size=256, n_epochs=2, seed=0, device="cpu")
    model.learn(2_048)
    assert model.num_timesteps >= 2_048
    assert len(model.ep_info_buffer) > 0  # whole episodes went through SB3's Monitor
    obs = vec.reset()
    actions, _ = model.predict(obs, deterministic=True)
    assert actions.shape == (4,) and vec.action_space.contains(int(actions[0]))
    vec.close()


def test_ppo_learns_on_a_lone_gymnasium_view():
    env = gymnasium.make(ENV, **FAST)
    model = PPO("MlpPolicy", env, n_steps=512, batch_size=256, n_epochs=2, seed=0, device="cpu")
    model.learn(1_024)
    assert model.num_timesteps >= 1_024
    obs, _ = env.reset(seed=0)
    action, _ = model.predict(obs, deterministic=True)
    _, reward, *_ = env.step(action)
    assert np.isfinite(reward)
    env.close()
