#!/usr/bin/env python3
"""Train a model from a TOML config through the Python binding of libtrainrt.

    python3 examples/python/train.py CONFIG.toml [--steps N] [--save DIR] [--sample N]

Trains N steps (default: the config's train.steps) and prints the loss of every step
("step N loss X ..."), evaluates on the validation data, saves a checkpoint into DIR when
--save DIR is given, and samples a few tokens after a prompt. Install the binding first
(``pip install bindings/python``) and make libtrainrt findable (``TRAINRT_LIB_DIR``).
"""
import argparse
import sys

import trainrt


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config", help="a TOML run config (docs/CONFIG.md)")
    ap.add_argument("--steps", type=int, default=0, help="steps to train (0: train.steps)")
    ap.add_argument("--save", metavar="DIR", help="checkpoint folder to write (must not exist)")
    ap.add_argument("--sample", type=int, default=32, metavar="N", help="tokens to sample")
    ap.add_argument("--prompt", default="ROMEO:", help="prompt to sample after")
    args = ap.parse_args()

    cfg = trainrt.Config.from_file(args.config)
    if args.steps > 0:
        cfg.set("train.steps", args.steps)
    cfg.set("runtime.log_every", 1)  # one progress report per step
    # Library warnings go to stderr, tagged with their level.
    cfg.set_log(lambda level, msg: print("[trainrt %s] %s" % (level.name, msg),
                                         file=sys.stderr), trainrt.LogLevel.WARN)
    print("# libtrainrt %s, %d steps, %s parameters"
          % (trainrt.version(), cfg.get_int("train.steps"), f"{cfg.model_info().parameters:,}"))

    with cfg, trainrt.Session(cfg) as session:
        # train_iter runs the library's training loop (log and eval cadence, metrics.jsonl)
        # and yields its progress reports; breaking out of the loop would stop it cleanly.
        for p in session.train_iter():
            if p.kind == trainrt.ProgressKind.STEP:
                print("step %d loss %.6f lr %.3e grad_norm %.4f (%.1f ms)"
                      % (p.step, p.loss, p.lr, p.grad_norm, p.ms))
            else:
                print("eval after step %d: val loss %.6f" % (p.step, p.loss))

        print("val loss %.6f" % session.eval())
        m = session.metrics()
        print("%d steps, %d tokens, %.0f tokens/s" % (m.step, m.tokens_total, m.tokens_per_s))

        session.metadata["example"] = "examples/python/train.py"
        if args.save:  # not into train.out_dir unasked: its `latest` would move to this run
            print("saved %s" % session.save(args.save))

        if args.sample > 0:
            # Byte-level models (vocab_size 256): the UTF-8 bytes are the ids. A model with a
            # tokenizer would pass trainrt.Tokenizer(path) as generate's third argument.
            if cfg.get_int("model.vocab_size") == 256:
                text = session.generate(args.prompt, args.sample, temperature=0.8, top_k=40,
                                        seed=1)
                print("sample: %r" % (args.prompt + text))
            else:
                ids = session.sample([0], args.sample, temperature=0.8, top_k=40, seed=1)
                print("sample ids:", ids)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except trainrt.Error as e:
        print("train.py: %s (%s)" % (e, e.status_name), file=sys.stderr)
        sys.exit(1)
