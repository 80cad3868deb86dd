"""benchmarks/zoo_curve.py: a curve from SB3 Monitor logs, on hand-made logs."""

import pytest

from benchmarks import zoo_curve

ENV0 = '#{"t_start": 0, "env_id": "X"}\nr,l,t\n1.0,100,1.0\n3.0,200,2.0\n'
ENV1 = '#{"t_start": 0, "env_id": "X"}\nr,l,t\n2.0,150,1.5\n10.0,100,2.5\n'


def test_game_ends_scale_each_env_frames_by_the_number_of_envs():
    monitors = [zoo_curve.read_monitor(ENV0), zoo_curve.read_monitor(ENV1)]
    assert monitors[0] == [(1.0, 100), (3.0, 200)]
    # env 0 ends games at 100 and 300 own frames, env 1 at 150 and 250; two envs: x 2
    assert zoo_curve.game_ends(monitors) == [(200, 1.0), (300, 2.0), (500, 10.0), (600, 3.0)]


def test_window_curve_by_hand():
    ends = [(200, 1.0), (300, 2.0), (500, 10.0), (600, 3.0)]
    rows = zoo_curve.window_curve(ends, window=250, max_frames=750)
    # (0, 250]: the game of 1.0; (250, 500]: 2.0 and 10.0; (500, 750]: 3.0
    assert rows[0] == (250, 1, 1.0, 1.0)
    assert rows[1] == (500, 2, 6.0, (1.0 + 2.0 + 10.0) / 3)
    assert rows[2] == (750, 1, 3.0, 4.0)
    assert zoo_curve.window_curve(ends, window=100, max_frames=100) == [(100, 0, None, None)]


def test_last_ten_games_only():
    ends = [(i, float(i)) for i in range(1, 13)]
    (row,) = zoo_curve.window_curve(ends, window=12, max_frames=12)
    assert row == (12, 12, 6.5, sum(range(3, 13)) / 10)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="starts with a '#{json}' line"):
        zoo_curve.read_monitor("r,l,t\n1,2,3\n")
    with pytest.raises(ValueError, match="has the columns r,l,t"):
        zoo_curve.read_monitor("#{}\na,b\n1,2\n")
    with pytest.raises(ValueError, match="need 0 < window <= max_frames"):
        zoo_curve.window_curve([], window=0, max_frames=10)
