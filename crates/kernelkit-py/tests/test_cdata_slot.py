"""The search for the word of a tensor's object that holds its `TensorImpl`
address (`src/ffi/tensor_impl_slot.rs`), checked without torch: on ctypes integers, whose
objects hold their value inline, given a `_cdata` that returns it."""

import ctypes

from kernelkit import _testing as hooks

A, B, C = 0x1234_5678_9ABC_DEF0, 0x0FED_CBA9_8765_4321, 0x1111_2222_3333_4444


class Held(ctypes.c_uint64):
    @property
    def _cdata(self):
        return self.value


class AlsoHeld(Held):
    pass


class Other(Held):
    pass


class Elsewhere(ctypes.c_uint64):
    """Its `_cdata` is no word of the object."""

    @property
    def _cdata(self):
        return self.value + 1


def check(types, probes, objects):
    return hooks.cdata_slot_check(types, probes, objects)


def test_the_one_offset_is_found_and_read_for_the_types_searched():
    reads = check([Held], [Held(A), Held(B)], [Held(C), AlsoHeld(C), 7, "x"])
    # Held is read; its subclass, not searched, is not (its attribute is).
    assert reads == [C, None, None, None]


def test_two_types_each_with_a_probe():
    reads = check([Held, AlsoHeld], [Held(A), AlsoHeld(B)], [Held(C), AlsoHeld(A), Other(B)])
    assert reads == [C, A, None]


def test_no_slot_without_enough_distinct_probes_of_the_types():
    assert check([Held], [Held(A)], []) is None  # one probe
    assert check([Held], [Held(A), Held(A)], []) is None  # the same address twice
    assert check([Held], [Held(A), Held(0)], []) is None  # a null address
    assert check([Held], [Held(A), Other(B)], []) is None  # a probe of a type not searched
    assert check([Held, AlsoHeld], [Held(A), Held(B)], []) is None  # a type with no probe
    assert check([], [Held(A), Held(B)], []) is None


def test_no_slot_where_no_word_holds_the_address():
    assert check([Elsewhere], [Elsewhere(A), Elsewhere(B)], []) is None
