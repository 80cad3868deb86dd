"""``alf.summary.render``: images drawn only while rendering is on, and ``alf.bin.play``
drawing a policy's images beside the env frames of its video."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import alf
import alf.summary.render as render
from alf.tensor_specs import BoundedTensorSpec

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DISCRETE = BoundedTensorSpec((), dtype=torch.int64, minimum=0, maximum=1)


@pytest.fixture
def rendering():
    pytest.importorskip("matplotlib")
    with render.rendering(True):
        yield


def test_disabled_by_default_and_returns_none_without_reading_data():
    assert not render.is_rendering_enabled()
    not_data = object()  # any real drawing would fail on it
    assert render.render_bar("b", not_data) is None
    assert render.render_curve("c", not_data) is None
    assert render.render_heatmap("h", not_data) is None
    assert render.render_text("t", not_data) is None
    assert render.render_action("a", torch.tensor([1]), DISCRETE) is None
    dist = torch.distributions.Categorical(probs=torch.tensor([[0.5, 0.5]]))
    assert render.render_action_distribution("d", dist, DISCRETE) is None
    spec = {"x": DISCRETE, "y": DISCRETE}
    assert render.render_action("a", {"x": 0, "y": 1}, spec) == {"x": None, "y": None}


def test_enable_rendering_switch():
    render.enable_rendering(True)
    try:
        assert render.is_rendering_enabled()
    finally:
        render.enable_rendering(False)
    assert not render.is_rendering_enabled()
    with render.rendering(True):
        assert render.is_rendering_enabled()
    assert not render.is_rendering_enabled()


def test_render_bar_size_and_determinism(rendering):
    data = np.array([1.0, -2.0, 0.5])
    img = render.render_bar("bars", data, img_height=120, img_width=160)
    assert isinstance(img, render.Image)
    assert img.shape == (120, 160, 3) and img.data.dtype == np.uint8
    again = render.render_bar("bars", data.copy(), img_height=120, img_width=160)
    assert np.array_equal(img.data, again.data)
    other = render.render_bar("bars", np.array([3.0, 1.0, -1.0]), img_height=120, img_width=160)
    assert np.mean(np.any(img.data != other.data, axis=2)) > 0.01
    # not a blank image: the bars are coloured
    assert len(np.unique(img.data.reshape(-1, 3), axis=0)) > 10
    # default size: figsize * dpi
    assert render.render_bar("bars", data, figsize=(2, 1.5), dpi=50).shape == (75, 100, 3)
    # one side given: the other keeps the aspect ratio
    assert render.render_bar("bars", data, figsize=(2, 1), dpi=50, img_width=60).shape == (
        30,
        60,
        3,
    )


def test_render_curve_heatmap_text(rendering):
    curve = render.render_curve("c", torch.tensor([[0.0, 1.0, 4.0], [2.0, 2.0, 2.0]]), dpi=40)
    assert curve.shape == (80, 80, 3)
    flat = render.render_curve("c", torch.tensor([[4.0, 1.0, 0.0], [2.0, 2.0, 2.0]]), dpi=40)
    assert not np.array_equal(curve.data, flat.data)
    heat = render.render_heatmap("h", np.eye(3), img_height=50, img_width=70)
    assert heat.shape == (50, 70, 3)
    assert not np.array_equal(
        heat.data, render.render_heatmap("h", 1 - np.eye(3), img_height=50, img_width=70).data
    )
    text = render.render_text("t", "hello", dpi=100)
    assert text.shape == (40, 50, 3)  # 5 characters of 0.1 inch, 0.4 inch high
    assert not np.array_equal(text.data, render.render_text("t", "world", dpi=100).data)


def test_bad_input_is_one_line_error(rendering):
    with pytest.raises(ValueError, match="'m' needs data of rank"):
        render.render_bar("m", np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="row_labels has 2 labels for 3"):
        render.render_heatmap("h", np.eye(3), row_labels=["a", "b"])
    with pytest.raises(TypeError, match="needs a Categorical"):
        render.render_action_distribution("d", torch.distributions.Normal(0.0, 1.0), DISCRETE)


def test_render_action_of_a_discrete_action(rendering):
    kwargs = dict(img_height=64, img_width=64, dpi=40)
    img = render.render_action("act", torch.tensor([1]), DISCRETE, **kwargs)
    # a bar of the action on the spec's bounds, labelled as an integer
    expected = render.render_bar(
        "act", np.array([1.0]), y_range=(0, 1), annotate_format="%d", x_ticks=[0], **kwargs
    )
    assert np.array_equal(img.data, expected.data)
    zero = render.render_action("act", torch.tensor([0]), DISCRETE, **kwargs)
    assert not np.array_equal(img.data, zero.data)
    nested = render.render_action(
        "act",
        {"a": torch.tensor([1]), "b": torch.tensor([0])},
        {"a": DISCRETE, "b": DISCRETE},
        **kwargs,
    )
    assert set(nested) == {"a", "b"}
    assert np.array_equal(
        nested["b"].data, render.render_action("act/b", torch.tensor([0]), DISCRETE, **kwargs).data
    )


def test_render_action_of_a_continuous_action(rendering):
    spec = BoundedTensorSpec((2,), minimum=-1.0, maximum=1.0)
    img = render.render_action("act", torch.tensor([[0.5, -0.25]]), spec, dpi=40)
    expected = render.render_bar(
        "act", np.array([[0.5, -0.25]]), y_range=(-1, 1), x_ticks=[0, 1], dpi=40
    )
    assert np.array_equal(img.data, expected.data)


def test_render_action_distribution_of_a_categorical(rendering):
    probs = torch.tensor([[0.2, 0.8]])
    img = render.render_action_distribution(
        "dist", torch.distributions.Categorical(probs=probs), DISCRETE, dpi=40
    )
    assert np.array_equal(img.data, render.render_curve("dist", np.array([0.2, 0.8]), dpi=40).data)
    other = render.render_action_distribution(
        "dist", torch.distributions.Categorical(probs=torch.tensor([[0.9, 0.1]])), DISCRETE, dpi=40
    )
    assert not np.array_equal(img.data, other.data)


def test_render_action_distribution_of_a_continuous_action(rendering):
    spec = BoundedTensorSpec((1,), minimum=-1.0, maximum=1.0)
    dist = torch.distributions.Normal(torch.full((1, 1), -0.5), torch.full((1, 1), 0.1))
    torch.manual_seed(0)
    img = render.render_action_distribution("d", dist, spec, n_samples=200, n_bins=10, dpi=40)
    torch.manual_seed(0)
    points = dist.sample((200,)).reshape(200)
    hist = np.histogram(points.numpy(), bins=10, range=(-1, 1), density=True)[0]
    expected = render.render_curve("d", hist[None], x_range=(-1, 1), legends=["d0"], dpi=40)
    assert np.array_equal(img.data, expected.data)


def test_scope_prefixes_the_name(rendering):
    with alf.summary.scope("Outer"), alf.summary.scope("Inner"):
        assert alf.summary.scope_name() == "Outer/Inner/"
        img = render.render_bar("b", np.array([1.0, 2.0]), dpi=40)
    assert alf.summary.scope_name() == ""
    assert np.array_equal(
        img.data, render.render_bar("Outer/Inner/b", np.array([1.0, 2.0]), dpi=40).data
    )
    assert not np.array_equal(img.data, render.render_bar("b", np.array([1.0, 2.0]), dpi=40).data)
    with pytest.raises(ValueError, match="non-empty string"), alf.summary.scope(""):
        pass


def test_missing_matplotlib_is_one_line_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with render.rendering(True), pytest.raises(ImportError, match=r"pip install 'alf\[plot\]'"):
        render.render_bar("b", np.array([1.0]))


def _solid(h, w, value):
    return render.Image(np.full((h, w, 3), value, dtype=np.uint8))


def test_image_composition():
    a, b, c = _solid(10, 20, 1), _solid(30, 5, 2), _solid(4, 4, 3)
    wide = render.Image.stack_images([a, b])
    assert wide.shape == (30, 25, 3)
    assert (wide.data[:10, :20] == 1).all() and (wide.data[:, 20:] == 2).all()
    assert (wide.data[10:, :20] == 255).all()  # padding is white
    tall = render.Image.stack_images([a, b], horizontal=False)
    assert tall.shape == (40, 20, 3) and (tall.data[10:, :5] == 2).all()
    # 3 images: rows of 2 (ceil(sqrt(3))), in nest order; Nones and tensors are ignored
    packed = render.Image.pack_image_nest({"a": a, "b": [b, None], "c": c, "t": torch.zeros(2)})
    assert packed.shape == (30 + 4, 25, 3)
    assert (packed.data[30:34, :4] == 3).all()
    assert render.Image.pack_image_nest({"x": None, "t": torch.zeros(1)}) is None
    gray = render.Image(np.arange(6, dtype=np.uint8).reshape(2, 3))
    assert gray.shape == (2, 3, 3) and (gray.data[1, 2] == 5).all()
    big = _solid(2, 3, 7).resize(height=4)
    assert big.shape == (4, 6, 3) and (big.data == 7).all()
    with pytest.raises(ValueError, match=r"got shape \(2, 2, 4\)"):
        render.Image(np.zeros((2, 2, 4), dtype=np.uint8))
    with pytest.raises(ValueError, match="uint8"):
        render.Image(np.zeros((2, 2, 3)))


RENDER_CONF = """
    from functools import partial

    import alf
    import alf.summary.render as render
    from alf.algorithms.actor_critic_algorithm import ActorCriticAlgorithm
    from alf.examples import ac_cart_pole_conf  # noqa: F401


    class RenderingActorCritic(ActorCriticAlgorithm):
        def predict_step(self, inputs, state):
            alg_step = super().predict_step(inputs, state)
            with alf.summary.scope("Render"):
                action = render.render_action(
                    name="action", action=alg_step.output, action_spec=self._action_spec, dpi=40
                )
                dist = render.render_action_distribution(
                    name="dist",
                    act_dist=alg_step.info.action_distribution,
                    action_spec=self._action_spec,
                    dpi=40,
                )
            return alg_step._replace(info=dict(action=action, dist=dist, ac=alg_step.info))


    alf.config(
        "TrainerConfig",
        algorithm_ctor=partial(RenderingActorCritic, optimizer=alf.optimizers.Adam(lr=1e-3)),
    )
"""


def _run(*args):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, "-m", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_train_evaluate_and_play_with_rendered_images(tmp_path):
    pytest.importorskip("matplotlib")
    PIL = pytest.importorskip("PIL.Image")
    gym = pytest.importorskip("gymnasium")
    conf = tmp_path / "render_conf.py"
    conf.write_text(textwrap.dedent(RENDER_CONF))
    root = tmp_path / "run"
    _run(
        "alf.bin.train", "--conf", conf, "--root_dir", root,
        "--conf_param", "TrainerConfig.num_iterations=2",
        "--conf_param", "TrainerConfig.eval_interval=1",
        "--conf_param", "TrainerConfig.num_eval_episodes=2",
    )  # fmt: skip
    out = _run("alf.bin.play", "--root_dir", root, "--num_episodes", "1")
    assert "Episode 1: return" in out
    video = tmp_path / "x.gif"
    out = _run("alf.bin.play", "--root_dir", root, "--num_episodes", "1", "--record_file", video)
    length = int(out.split("length ")[1].split()[0])
    env = gym.make("CartPole-v1", render_mode="rgb_array")
    env.reset(seed=0)
    env_height, env_width = env.render().shape[:2]
    env.close()
    gif = PIL.open(video)
    assert gif.n_frames == length + 1
    width, height = gif.size
    assert height == env_height and width > env_width
    for index in (0, gif.n_frames - 2):
        gif.seek(index)
        panel = np.asarray(gif.convert("RGB"))[:, env_width:]
        # the images are drawn beside the env: the panel is not blank
        assert len(np.unique(panel.reshape(-1, 3), axis=0)) > 2
