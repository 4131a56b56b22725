"""A byte-level BPE tokenizer for masked log lines, trained with Hugging Face ``tokenizers``.

Pre-tokenization splits on whitespace only (each piece keeps its leading space), so merges can
grow whole log words such as ``dfs.DataNode$DataXceiver:`` or ``<N2>:<N2>:<N2>`` into one token:
fewer tokens per line means more lines per second. Byte-level, so any input encodes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

SPECIAL_TOKENS = ["<pad>", "<s>", "</s>", "<unk>"]


def train_tokenizer(masked_lines: Iterable[str], vocab_size: int = 4096, min_frequency: int = 2):
    """-> transformers.PreTrainedTokenizerFast with BOS <s>, EOS </s>, PAD <pad>."""
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\s*\S+|\s+"), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tok.train_from_iterator((line + "\n" for line in masked_lines), trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                   unk_token="<unk>", clean_up_tokenization_spaces=False)


def save_tokenizer(tokenizer, out_dir: str | Path) -> None:
    tokenizer.save_pretrained(str(out_dir))
