#!/usr/bin/env python3
"""Reference BERT WordPiece tokenization (bert-base-uncased settings: lower-case, strip accents,
split CJK characters, max 100 characters per word), written from the published algorithm with
Python's own unicodedata and str.lower, for comparison with our C++ tokenizer.
Usage: wordpiece_reference.py vocab.txt texts.json out.json
texts.json: a list of strings; out.json: a list of lists of token ids."""

import json
import sys
import unicodedata


def is_whitespace(c):
    return c in " \t\n\r" or unicodedata.category(c) == "Zs"


def is_control(c):
    return c not in "\t\n\r" and unicodedata.category(c).startswith("C")


def is_punctuation(c):
    cp = ord(c)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(c).startswith("P")


def is_cjk(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


NEVER_SPLIT = {"[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"}


def basic_tokenize(text):
    cleaned = []
    for c in text:
        if ord(c) == 0 or ord(c) == 0xFFFD or is_control(c):
            continue
        cleaned.append(" " if is_whitespace(c) else c)
    spaced = "".join(" %s " % c if is_cjk(ord(c)) else c for c in cleaned)
    out = []
    for token in spaced.split():
        if token in NEVER_SPLIT:
            out.append(token)
            continue
        token = token.lower()
        token = "".join(c for c in unicodedata.normalize("NFD", token) if unicodedata.category(c) != "Mn")
        word = ""
        for c in token:
            if is_punctuation(c):
                if word:
                    out.append(word)
                word = ""
                out.append(c)
            else:
                word += c
        if word:
            out.append(word)
    return out


def wordpiece(word, vocab):
    if word in NEVER_SPLIT and word in vocab:
        return [vocab[word]]
    if len(word) > 100:
        return [vocab["[UNK]"]]
    pieces, start = [], 0
    while start < len(word):
        end, found = len(word), None
        while end > start:
            sub = ("##" if start > 0 else "") + word[start:end]
            if sub in vocab:
                found = vocab[sub]
                break
            end -= 1
        if found is None:
            return [vocab["[UNK]"]]
        pieces.append(found)
        start = end
    return pieces


def main():
    vocab = {}
    with open(sys.argv[1], encoding="utf-8") as f:
        for i, line in enumerate(f.read().split("\n")[:-1]):
            vocab.setdefault(line, i)
    texts = json.load(open(sys.argv[2], encoding="utf-8"))
    result = [[i for w in basic_tokenize(t) for i in wordpiece(w, vocab)] for t in texts]
    json.dump(result, open(sys.argv[3], "w"))


if __name__ == "__main__":
    main()
