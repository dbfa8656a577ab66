"""A file's head (its licence header and import block) found in each language, and the lines
near the change's names found by name."""

from __future__ import annotations

import pytest

from bot.context.excerpt import ChangeNames, Head, change_names, file_head, name_ranges

PYTHON = '''#!/usr/bin/env python3
# Copyright 2024 Example Corp.
# SPDX-License-Identifier: MIT
"""The module's own words stay."""

from __future__ import annotations

import os
from typing import (
    Any,
    Callable,
)

try:
    import ujson as json
except ImportError:
    import json

CONSTANT = 1
'''
JAVASCRIPT = """/**
 * @license Apache-2.0
 * Copyright 2024 Example Corp.
 */
'use strict';

import React from 'react';
import {
  useState,
  useEffect,
} from 'react';
const path = require('path');
export * from './types';

export function App() {}
"""
GO = """// Copyright 2024 The Authors. All rights reserved.
// Use of this source code is governed by a BSD-style license.

package server

import (
\t"fmt"
\t"net/http"
)

func Serve() {}
"""
JAVA = """/*
 * Licensed to the Apache Software Foundation (ASF).
 */
package org.example.app;

import java.util.List;
import static java.util.Objects.requireNonNull;

public class App {}
"""
KOTLIN = """package org.example

import kotlinx.coroutines.launch

fun main() {}
"""
NO_LICENCE = """// The server's entry point: it reads its flags and serves.
package main

func main() {}
"""


@pytest.mark.parametrize(
    ("text", "language", "heads"),
    [
        (PYTHON, "python", [Head(1, 3, "licence header"), Head(6, 18, "imports")]),
        (JAVASCRIPT, "javascript", [Head(1, 4, "licence header"), Head(5, 14, "imports")]),
        (GO, "go", [Head(1, 3, "licence header"), Head(4, 10, "imports")]),
        (JAVA, "java", [Head(1, 3, "licence header"), Head(4, 8, "imports")]),
        (KOTLIN, "kotlin", [Head(1, 4, "imports")]),
        (NO_LICENCE, "go", [Head(2, 3, "imports")]),  # a comment that is no licence stays
    ],
)
def test_the_head_of_a_file_in_each_language(text: str, language: str, heads: list[Head]) -> None:
    assert file_head(text.split("\n")[:-1], language) == heads


def test_names_of_a_change_come_from_its_code_not_its_words() -> None:
    lines = ["def price(order):", "    total = order.amount", "    return total", ""]
    names = change_names(
        [
            (
                lines,
                [2],
                [
                    "    total = compute_total(order)  # the whole order, rounded",
                    '    raise PriceError("the price may not be negative here")',
                    "    # Every word of this comment is prose that names nothing.",
                ],
            )
        ]
    )
    assert names.changed == {"price"}  # the function the changed line is in
    assert names.used == {"compute_total", "PriceError"}  # names only code writes
    assert not {"whole", "rounded", "negative", "comment", "prose"} & names.used


def test_a_definition_of_a_used_name_is_shown_with_what_follows_it() -> None:
    lines = ["import os", "", *[f"x_{n} = {n}" for n in range(40)]]
    lines += ["def compute_total(order):", "    return sum(order)", ""]
    lines += [f"y_{n} = {n}" for n in range(40)]
    names = ChangeNames(used=frozenset({"compute_total"}))
    (found,) = name_ranges(lines, names, file_head(lines, "python"))
    definition = lines.index("def compute_total(order):") + 1
    assert found.first == definition - 2 and found.last == definition + 14
    assert found.label == "defines compute_total"
