"""Money: exact parsing, the ledger precision, and the largest-remainder split (hand-worked and properties)."""
from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.money import (
    PRECISION,
    MoneyError,
    fmt,
    from_micros,
    quantize,
    split,
    split_micros,
    to_decimal,
    to_micros,
)

D = Decimal


# ---- parsing ------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, expected", [
    ("6.88", D("6.88")),
    (" 2.50 ", D("2.50")),
    ("1_000.25", D("1000.25")),
    ("-0.000001", D("-0.000001")),
    (42, D(42)),
    (D("12345678901234.123456"), D("12345678901234.123456")),
])
def test_to_decimal_takes_text_and_ints_as_written(value, expected):
    got = to_decimal(value)
    assert got == expected
    assert str(got) == str(expected)  # the digits as written, trailing zeros included


def test_to_decimal_refuses_floats_with_the_fix_in_the_message():
    with pytest.raises(MoneyError, match=r'price: 0\.1 is a float; write it as a decimal string such as "0\.1"'):
        to_decimal(0.1, what="price")


@pytest.mark.parametrize("value", [True, None, "abc", "", "NaN", "Infinity", "-inf", D("NaN"), [1]])
def test_to_decimal_refuses_what_is_not_a_finite_decimal(value):
    with pytest.raises(MoneyError):
        to_decimal(value)


def test_money_error_is_a_value_error():
    assert issubclass(MoneyError, ValueError)


# ---- precision ----------------------------------------------------------------------------------

@pytest.mark.parametrize("amount, expected", [
    ("0.0000005", "0.000000"),   # half to even: 0 is even
    ("0.0000015", "0.000002"),   # 1 -> 2
    ("0.0000025", "0.000002"),   # 2 stays
    ("-0.0000015", "-0.000002"),
    ("1.23456749", "1.234567"),
    # 30 significant digits: more than Python's default context of 28 holds, still exact
    ("12345678901234567890.1234565", "12345678901234567890.123456"),
])
def test_quantize_rounds_half_to_even_at_the_ledger_precision(amount, expected):
    got = quantize(D(amount))
    assert got == D(expected)
    assert got.as_tuple().exponent == -6


def test_micros_round_trip_and_refuse_sub_micro_amounts():
    assert to_micros(D("1.5")) == 1_500_000
    assert to_micros(D("-0.000001")) == -1
    assert from_micros(1) == D("0.000001")
    assert from_micros(-12_345_678_901_234_123_456) == D("-12345678901234.123456")
    with pytest.raises(MoneyError, match="more precision than the ledger's 1e-6"):
        to_micros(D("0.0000001"))


@given(st.integers(min_value=-10**20, max_value=10**20))
def test_micros_round_trip_property(micros):
    assert to_micros(from_micros(micros)) == micros


@pytest.mark.parametrize("amount, text", [
    (D("6.88"), "6.880000"),
    (D("1E+3"), "1000.000000"),        # never scientific notation in JSON or CSV
    (D("1E-6"), "0.000001"),
    (D("12345678901234.123456"), "12345678901234.123456"),
])
def test_fmt_is_plain_notation_at_the_ledger_precision(amount, text):
    assert fmt(amount) == text


# ---- split: hand-worked -------------------------------------------------------------------------

def test_split_thirds_gives_the_leftover_micro_to_the_smallest_key():
    # 1.000000 / 3 = 0.333333 r 0.000001 each; the remainders tie, the weights tie,
    # so the one leftover micro goes to the smallest key, "a".
    got = split(D("1.000000"), {"a": 1, "b": 1, "c": 1})
    assert got == {"a": D("0.333334"), "b": D("0.333333"), "c": D("0.333333")}
    assert sum(got.values()) == D("1.000000")


def test_split_tie_break_does_not_follow_input_order():
    got = split(D("1.000000"), [("c", 1), ("b", 1), ("a", 1)])
    assert got == {"a": D("0.333334"), "b": D("0.333333"), "c": D("0.333333")}
    assert list(got) == ["c", "b", "a"]  # the result keeps the caller's order of keys


def test_split_largest_remainders_get_the_leftover_micros():
    # 10 micros over weights 1, 2, 4 (total 7):
    #   a: 10*1/7 = 1 r 3;  b: 10*2/7 = 2 r 6;  c: 10*4/7 = 5 r 5;  1+2+5 = 8, 2 micros left
    #   -> b (r 6) and c (r 5): a 1, b 3, c 6
    got = split(D("0.000010"), {"a": 1, "b": 2, "c": 4})
    assert got == {"a": D("0.000001"), "b": D("0.000003"), "c": D("0.000006")}


def test_split_remainder_tie_goes_to_the_larger_weight_before_the_smaller_key():
    # 2 micros over a:1, b:3 (total 4): a: 2*1/4 = 0 r 2;  b: 2*3/4 = 1 r 2; 1 micro left.
    # Remainders tie at 2; b has the larger weight, so b gets it although "a" < "b".
    assert split(D("0.000002"), {"a": 1, "b": 3}) == {"a": D("0"), "b": D("0.000002")}


def test_split_zero_weights_get_zero():
    assert split(D("1.000000"), {"a": 0, "b": 1, "c": 1}) == {
        "a": D("0"), "b": D("0.500000"), "c": D("0.500000")}
    # one micro over b and c (tie, equal weights): b; a has weight zero and never gets a micro
    assert split(D("0.000001"), {"a": 0, "b": 1, "c": 1}) == {"a": D("0"), "b": D("0.000001"), "c": D("0")}


def test_split_negative_amounts_split_symmetrically():
    got = split(D("-1.000000"), {"a": 1, "b": 1, "c": 1})
    assert got == {"a": D("-0.333334"), "b": D("-0.333333"), "c": D("-0.333333")}
    assert sum(got.values()) == D("-1.000000")


def test_split_decimal_weights_and_another_precision():
    # 100.00 in cents over 0.5 / 0.25 / 0.25 -> 50.00 / 25.00 / 25.00
    got = split(D("100.00"), {"x": D("0.5"), "y": "0.25", "z": D("0.25")}, exp=D("0.01"))
    assert got == {"x": D("50.00"), "y": D("25.00"), "z": D("25.00")}
    assert all(v.as_tuple().exponent == -2 for v in got.values())


def test_split_parts_are_at_the_ledger_precision():
    got = split(D("7"), {"a": 1, "b": 2})
    # 7 / 3 = 2.333333 r 1 micro; 14 / 3 = 4.666666 r 2 micros: the leftover micro goes to b
    assert got == {"a": D("2.333333"), "b": D("4.666667")}
    assert all(v.as_tuple().exponent == PRECISION.as_tuple().exponent for v in got.values())


def test_split_keys_that_do_not_compare_are_ranked_by_repr():
    # repr("a") is "'a'", which sorts before "1": the string key wins the tie
    assert split(D("0.000001"), {1: 1, "a": 1}) == {1: D("0"), "a": D("0.000001")}
    assert split(D("0.000001"), {"a": 1, 1: 1}) == {1: D("0"), "a": D("0.000001")}


def test_split_takes_numpy_float_weights_as_the_numbers_they_print():
    got = split(D("1"), {"a": np.float64(0.25), "b": np.float64(0.75)})
    assert got == {"a": D("0.250000"), "b": D("0.750000")}


@pytest.mark.parametrize("amount, weights, message", [
    (D("1"), {"a": 0, "b": 0}, "all weights are zero"),
    (D("1"), {}, "all weights are zero"),
    (D("1"), {"a": 1, "b": -1}, "negative weight -1 for 'b'"),
    (D("1"), [("a", 1), ("a", 2)], "key 'a' given twice"),
    (D("0.0000001"), {"a": 1}, "is not a multiple of"),
])
def test_split_refuses(amount, weights, message):
    with pytest.raises(ValueError, match=message):
        split(amount, weights)


def test_split_refuses_a_float_amount():
    with pytest.raises(MoneyError, match="is a float"):
        split(1.0, {"a": 1})


# ---- split_micros: hand-worked ------------------------------------------------------------------

def test_split_micros_hand_worked():
    assert split_micros(1_000_000, [1, 1, 1]) == [333_334, 333_333, 333_333]   # lowest index on a tie
    assert split_micros(10, [1, 2, 4]) == [1, 3, 6]                            # as in split above
    assert split_micros(2, [1, 3]) == [0, 2]                                   # larger weight on a tie
    assert split_micros(-1_000_000, [1, 1, 1]) == [-333_334, -333_333, -333_333]
    assert split_micros(5, [0, 2, 0, 3]) == [0, 2, 0, 3]


@pytest.mark.parametrize("weights, message", [([0, 0], "all weights are zero"), ([], "all weights are zero"),
                                              ([1, -1], "negative weight")])
def test_split_micros_refuses(weights, message):
    with pytest.raises(ValueError, match=message):
        split_micros(10, weights)


# ---- properties ---------------------------------------------------------------------------------

MICROS = st.integers(min_value=-10**18, max_value=10**18)
#: weights with up to 6 decimal places, zero included
WEIGHT = st.one_of(st.just(D(0)), st.integers(min_value=0, max_value=10**9).map(lambda n: D(n).scaleb(-6)),
                   st.integers(min_value=0, max_value=1000).map(D))
KEYED_WEIGHTS = st.dictionaries(st.text(alphabet="abcdefgh", min_size=1, max_size=3), WEIGHT,
                                min_size=1, max_size=12).filter(lambda d: any(w > 0 for w in d.values()))
INT_WEIGHTS = st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=20).filter(any)


@settings(deadline=None)
@given(MICROS, KEYED_WEIGHTS)
def test_split_returns_exactly_its_amount(micros, weights):
    amount = from_micros(micros)
    parts = split(amount, weights)
    assert set(parts) == set(weights)
    assert sum(parts.values(), D(0)) == amount
    total_w = sum(weights.values())
    for k, part in parts.items():
        assert part == quantize(part)                        # whole micros
        exact = amount * weights[k] / total_w
        assert abs(part - exact) < PRECISION                 # within one micro of its exact share


@settings(deadline=None)
@given(MICROS, KEYED_WEIGHTS)
def test_split_gives_zero_weights_zero(micros, weights):
    parts = split(from_micros(micros), weights)
    assert all(parts[k] == 0 for k, w in weights.items() if w == 0)


@settings(deadline=None)
@given(MICROS, KEYED_WEIGHTS, st.randoms(use_true_random=False))
def test_split_does_not_depend_on_the_order_of_its_inputs(micros, weights, rnd):
    amount = from_micros(micros)
    items = list(weights.items())
    shuffled = items[:]
    rnd.shuffle(shuffled)
    assert split(amount, items) == split(amount, shuffled) == split(amount, dict(shuffled))


@settings(deadline=None)
@given(MICROS, KEYED_WEIGHTS)
def test_split_of_a_negative_amount_mirrors_the_positive_one(micros, weights):
    pos = split(from_micros(abs(micros)), weights)
    neg = split(from_micros(-abs(micros)), weights)
    assert neg == {k: -v for k, v in pos.items()}


@settings(deadline=None)
@given(MICROS, INT_WEIGHTS)
def test_split_micros_returns_exactly_its_amount_and_zero_for_zero_weights(total, weights):
    parts = split_micros(total, weights)
    assert sum(parts) == total
    assert len(parts) == len(weights)
    tw = sum(weights)
    for w, p in zip(weights, parts):
        assert abs(p * tw - total * w) < tw                   # within one micro of the exact share
        if w == 0:
            assert p == 0


@settings(deadline=None)
@given(MICROS, INT_WEIGHTS, st.randoms(use_true_random=False))
def test_split_micros_does_not_depend_on_the_order_of_its_inputs(total, weights, rnd):
    # Positional: a permutation of the weights permutes the parts. Equal weights may trade the
    # leftover micro by position, so compare the multiset of (weight, part) pairs.
    order = list(range(len(weights)))
    rnd.shuffle(order)
    shuffled = [weights[i] for i in order]
    assert sorted(zip(weights, split_micros(total, weights))) == sorted(zip(shuffled, split_micros(total, shuffled)))


@settings(deadline=None)
@given(MICROS, INT_WEIGHTS)
def test_split_and_split_micros_agree(total, weights):
    # int keys 0..n-1 rank like indices, so the keyed split makes the same choices as the positional one
    keyed = split(from_micros(total), dict(enumerate(weights)))
    assert [to_micros(keyed[i]) for i in range(len(weights))] == split_micros(total, weights)


def test_fmt_never_prints_negative_zero():
    # -0.0000001 rounds to zero at the ledger precision: it prints as zero, not as "-0.000000"
    assert fmt(D("-0.0000001")) == "0.000000"
    assert fmt(D("-1.5")) == "-1.500000"
