//! Chat: ChatTemplate (render, stop ids), Session::generate ending at a stop id, and
//! prepare_text of chat data (the loss masks).
use std::path::{Path, PathBuf};
use trainrt::{ChatTemplate, LossMask, PrepareOptions, SampleOptions, Status, Tokenizer};
mod common;

/// Each message as <|role|>content<|eot|>; the assistant's turn opened by <|assistant|>.
const TEMPLATE: &str = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|eot|>{% endfor %}\
                        {% if add_generation_prompt %}<|assistant|>{% endif %}";
const CONVERSATION: &str =
    r#"{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}"#;

/// A model folder: the tiny tokenizer and a tokenizer_config.json (`config`, or TEMPLATE
/// with eos_token <|eot|>).
fn chat_folder(name: &str, config: Option<&str>) -> PathBuf {
    let dir = common::tmp(name);
    common::write_tiny_tokenizer(&dir);
    let default = format!(r#"{{"eos_token": "<|eot|>", "chat_template": "{TEMPLATE}"}}"#);
    std::fs::write(
        dir.join("tokenizer_config.json"),
        config.unwrap_or(&default),
    )
    .unwrap();
    dir
}

fn read_shard(path: &Path) -> Vec<u16> {
    let b = std::fs::read(path).unwrap();
    let n = i32::from_le_bytes(b[8..12].try_into().unwrap()) as usize;
    (0..n)
        .map(|i| u16::from_le_bytes([b[1024 + 2 * i], b[1025 + 2 * i]]))
        .collect()
}

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn renders_and_gives_stop_ids() {
    assert_send_sync::<ChatTemplate>();
    let dir = chat_folder("chat-render", None);
    let t = ChatTemplate::load(&dir, None).unwrap();
    assert_eq!(
        t.render(CONVERSATION, false, None).unwrap(),
        "<|user|>hi<|eot|><|assistant|>yo<|eot|>"
    );
    let user = r#"[{"role": "user", "content": "hi"}]"#;
    assert_eq!(
        t.render(user, true, None).unwrap(),
        "<|user|>hi<|eot|><|assistant|>"
    );
    assert_eq!(
        t.render(user, false, Some(r#"{"x": 1}"#)).unwrap(),
        "<|user|>hi<|eot|>"
    );
    let e = t.render("[1", false, None).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    let e = t.render(user, false, Some("[]")).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(e.message().contains("vars_json"), "{}", e.message());

    let tok = Tokenizer::load(&dir).unwrap();
    assert_eq!(t.stop_ids(&tok).unwrap(), vec![300]);
    std::fs::write(
        dir.join("generation_config.json"),
        r#"{"eos_token_id": [300, 10, 259]}"#,
    )
    .unwrap();
    assert_eq!(t.stop_ids(&tok).unwrap(), vec![300, 10, 259]);

    let e = ChatTemplate::load(&dir, Some("nope")).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(e.message().contains("nope"), "{}", e.message());
    let plain = chat_folder("chat-plain", Some(r#"{"eos_token": "<|eot|>"}"#));
    let e = ChatTemplate::load(&plain, None).unwrap_err();
    assert!(e.message().contains("chat_template"), "{}", e.message());
}

#[test]
fn generate_stops_at_a_stop_id() {
    let mut s = common::session();
    s.step().unwrap();
    let prompt: Vec<i32> = b"ROMEO:".iter().map(|&b| i32::from(b)).collect();
    let greedy = SampleOptions {
        temperature: 0.0,
        ..Default::default()
    };
    let a = s.sample(&prompt, 6, &greedy).unwrap();
    assert_eq!(s.generate(&prompt, 6, &greedy, &[]).unwrap(), a);
    assert_eq!(
        s.generate(&prompt, 6, &greedy, &[a[0]]).unwrap(),
        vec![a[0]]
    );
    assert!(s.generate(&prompt, 0, &greedy, &[a[0]]).unwrap().is_empty());
    let e = s.generate(&[], 4, &greedy, &[]).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
}

#[test]
fn prepares_chat_data_with_masks() {
    let model = chat_folder("chat-prepare", None);
    let src = model.join("chat.jsonl");
    std::fs::write(&src, format!("{CONVERSATION}\n")).unwrap();
    let out = model.join("data");
    let mut o = PrepareOptions {
        chat: true,
        ..PrepareOptions::new(&model)
    };
    let r = trainrt::prepare_text(&[&src], &out, &o).unwrap();
    // <|user|> 8 bytes, hi 2, <|eot|>, <|assistant|> 13, yo 2, <|eot|>: 27 tokens.
    assert_eq!((r.documents, r.examples, r.per_turn), (1, 1, 0));
    assert_eq!((r.train_tokens, r.target_tokens), (27, 3));
    let mut want = vec![0u16; 27];
    want[0] = 2; // begins the example
    want[24] = 1; // y, o, <|eot|>
    want[25] = 1;
    want[26] = 1;
    assert_eq!(read_shard(&out.join("mask_train.bin")), want);
    o.loss_mask = LossMask::All;
    assert_eq!(
        trainrt::prepare_text(&[&src], &out, &o)
            .unwrap()
            .target_tokens,
        26
    );
    o.shard_tokens = 100;
    let e = trainrt::prepare_text(&[&src], &out, &o).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
}
