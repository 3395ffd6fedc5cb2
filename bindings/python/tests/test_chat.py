"""Chat: ChatTemplate (render, stop_ids), Session.generate_ids / generate with stop ids, and
prepare_text with chat data (the loss masks)."""
from __future__ import annotations

import json
import os
import struct
import threading

import trainrt

from _support import TestCase, scratch, session, write_tiny_tokenizer

# Each message as <|role|>content<|eot|>; the assistant's turn opened by <|assistant|>.
TEMPLATE = ("{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|eot|>{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>{% endif %}")
CONVERSATION = {"messages": [{"role": "user", "content": "hi"},
                             {"role": "assistant", "content": "yo"}]}


def chat_folder(config: object = None) -> str:
    """A model folder: the tiny tokenizer and a tokenizer_config.json with TEMPLATE."""
    d = scratch("chat-")
    write_tiny_tokenizer(d)
    if config is None:
        config = {"eos_token": "<|eot|>", "chat_template": TEMPLATE}
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump(config, f)
    return d


def read_shard(path: str) -> list:
    with open(path, "rb") as f:
        header = struct.unpack("<256i", f.read(1024))
        return list(struct.unpack("<%dH" % header[2], f.read(2 * header[2])))


class ChatTemplateTest(TestCase):
    def test_render(self) -> None:
        t = self.own(trainrt.ChatTemplate(chat_folder()))
        self.assertEqual(t.render(CONVERSATION), "<|user|>hi<|eot|><|assistant|>yo<|eot|>")
        user = CONVERSATION["messages"][:1]
        self.assertEqual(t.render(user, add_generation_prompt=True),
                         "<|user|>hi<|eot|><|assistant|>")
        self.assertEqual(t.render(json.dumps(user)), "<|user|>hi<|eot|>")  # JSON text
        self.assertEqual(t.render(user, variables={"unused": 1}), "<|user|>hi<|eot|>")
        long = [{"role": "user", "content": "x" * 5000}]
        self.assertEqual(len(t.render(long)), 5000 + len("<|user|><|eot|>"))

    def test_generation_spans(self) -> None:
        t = self.own(trainrt.ChatTemplate(chat_folder({"chat_template": (
            "{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}"
            "{{ m.content }}{% endgeneration %}{% else %}{{ m.content }}{% endif %}"
            "{% endfor %}")})))
        conv = [{"role": "user", "content": "\u00e9"}, {"role": "assistant", "content": "ab"}]
        self.assertEqual(t.render(conv), "\u00e9ab")
        self.assertEqual(t.generation_spans(conv), [(2, 4)])  # bytes: the é is two
        plain = self.own(trainrt.ChatTemplate(chat_folder()))
        self.assertEqual(plain.generation_spans(CONVERSATION), [])

    def test_named_templates_and_variables(self) -> None:
        d = chat_folder({"chat_template": [
            {"name": "default", "template": "{{ messages[0].content }}"},
            {"name": "greet", "template": "{{ greeting }} {{ messages[0].content }}"}]})
        with trainrt.ChatTemplate.load(d, "greet") as t:
            self.assertEqual(t.render([{"role": "user", "content": "hi"}],
                                      variables='{"greeting": "hey"}'), "hey hi")
        with self.assertRaises(trainrt.InvalidArgumentError) as cm:
            trainrt.ChatTemplate(d, "nope")
        self.assertIn("nope", cm.exception.message)

    def test_errors_and_close(self) -> None:
        with self.assertRaises(trainrt.Error) as cm:
            trainrt.ChatTemplate(chat_folder({"eos_token": "<|eot|>"}))  # no template
        self.assertIn("chat_template", cm.exception.message)
        t = trainrt.ChatTemplate(chat_folder())
        with self.assertRaises(trainrt.InvalidArgumentError):
            t.render("[1")  # not JSON
        with self.assertRaises(trainrt.InvalidArgumentError):
            t.render(7)  # not a conversation
        with self.assertRaises(trainrt.InvalidArgumentError):
            t.render([], variables=[1, 2])  # not an object
        t.close()
        t.close()  # idempotent
        self.assertTrue(t.closed)
        with self.assertRaises(trainrt.ClosedError):
            t.render([])
        # Close from another thread: no crash.
        t2 = trainrt.ChatTemplate(chat_folder())
        th = threading.Thread(target=t2.close)
        th.start()
        th.join()
        self.assertTrue(t2.closed)

    def test_stop_ids(self) -> None:
        d = chat_folder()
        tok = self.own(trainrt.Tokenizer(d))
        t = self.own(trainrt.ChatTemplate(d))
        self.assertEqual(t.stop_ids(tok), [300])  # tokenizer_config's eos_token
        with open(os.path.join(d, "generation_config.json"), "w") as f:
            json.dump({"eos_token_id": 10}, f)
        self.assertEqual(t.stop_ids(tok), [10])
        with open(os.path.join(d, "generation_config.json"), "w") as f:
            json.dump({"eos_token_id": [300, 10, 259]}, f)
        self.assertEqual(t.stop_ids(tok), [300, 10, 259])


class GenerateTest(TestCase):
    def test_generate_stops_at_a_stop_id(self) -> None:
        s = self.own(session())
        s.train(2)
        prompt = list(b"ROMEO:")
        greedy = s.sample(prompt, 6, temperature=0)
        self.assertEqual(s.generate_ids(prompt, 6, temperature=0), greedy)
        self.assertEqual(s.generate_ids(prompt, 6, stop_ids=[greedy[0]], temperature=0),
                         greedy[:1])
        absent = next(i for i in range(256) if i not in greedy)
        self.assertEqual(s.generate_ids(prompt, 6, stop_ids=[absent], temperature=0), greedy)
        self.assertEqual(s.generate_ids(prompt, 0, stop_ids=[1]), [])
        text = s.generate("ROMEO:", 6, temperature=0, stop_ids=[greedy[0]])
        self.assertEqual(text, bytes(greedy[:1]).decode("utf-8", "replace"))
        with self.assertRaises(trainrt.InvalidArgumentError):
            s.generate_ids(prompt, -1)
        with self.assertRaises(trainrt.InvalidArgumentError):
            s.generate_ids([], 4)


class PrepareChatTest(TestCase):
    def test_prepare_chat_writes_the_masks(self) -> None:
        model = chat_folder()
        src = os.path.join(scratch(), "chat.jsonl")
        with open(src, "w") as f:
            f.write(json.dumps(CONVERSATION) + "\n")
        out = os.path.join(scratch(), "data")
        r = trainrt.prepare_text(src, out, tokenizer=model, val_fraction=0, chat=True)
        # <|user|> 8 bytes, hi 2, <|eot|>, <|assistant|> 13, yo 2, <|eot|>: 27 tokens
        self.assertEqual((r.documents, r.examples, r.per_turn), (1, 1, 0))
        self.assertEqual((r.train_tokens, r.target_tokens), (27, 3))
        want = [0] * 27
        want[0] = 2  # begins the example
        want[24] = want[25] = want[26] = 1  # y, o, <|eot|>
        self.assertEqual(read_shard(os.path.join(out, "mask_train.bin")), want)
        r = trainrt.prepare_text(src, out, tokenizer=model, val_fraction=0, chat=True,
                                 loss_mask=trainrt.LossMask.ALL)
        self.assertEqual(r.target_tokens, 26)
        with self.assertRaises(trainrt.InvalidArgumentError):
            trainrt.prepare_text(src, out, tokenizer=model, chat=True, shard_tokens=100)
        with self.assertRaises(trainrt.InvalidArgumentError):
            trainrt.prepare_text(src, out, tokenizer=model, chat=True, loss_mask=9)
        with self.assertRaises(trainrt.InvalidArgumentError):
            trainrt.prepare_text(src, out, tokenizer=model, chat=True, template_vars="[]")
        with self.assertRaises(trainrt.Error):
            trainrt.prepare_text(src, out, tokenizer=model, chat=True, chat_template="nope")
