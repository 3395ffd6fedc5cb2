using System;

namespace Trainrt
{
    /// <summary>Which tokens of a chat example are targets (TRAINRT_LOSS_MASK_*).</summary>
    public enum LossMask
    {
        /// <summary>Assistant for "messages", completion for prompt-completion.</summary>
        Default = 0,
        /// <summary>Every assistant turn, its end-of-turn token included.</summary>
        Assistant = 1,
        /// <summary>The completion; of "messages", the last assistant turn.</summary>
        Completion = 2,
        /// <summary>Every token but the first.</summary>
        All = 3,
    }

    /// <summary>A model folder's chat template (its chat_template.jinja, else
    /// tokenizer_config.json's "chat_template"), rendered as Hugging Face transformers'
    /// apply_chat_template renders it; a construct the engine does not support is refused at
    /// load (Status.Unsupported naming it and its line). Immutable like a Tokenizer: safe to
    /// use from several threads at once. Dispose frees it (after any call in flight on another
    /// thread has returned); the finalizer frees a forgotten one.</summary>
    public sealed class ChatTemplate : IDisposable
    {
        readonly ChatTemplateHandle handle;

        ChatTemplate(IntPtr p)
        {
            if (p == IntPtr.Zero) throw new TrainrtException(Status.Internal, "NULL handle", "trainrt_chat_template_load");
            handle = new ChatTemplateHandle(p);
        }

        /// <summary>The template of a model folder; name: one of its named templates, null =
        /// "default" (or the only one).</summary>
        public static ChatTemplate Load(string folder, string name = null)
        {
            Loading.Require();
            IntPtr p;
            Errors.Check(Native.trainrt_chat_template_load(out p, Utf8.Arg(folder, "folder"), Utf8.Encode(name, "name")),
                         "trainrt_chat_template_load");
            return new ChatTemplate(p);
        }

        public ChatTemplateHandle Handle { get { return Live(); } }

        ChatTemplateHandle Live()
        {
            if (handle.IsClosed) throw new ObjectDisposedException("Trainrt.ChatTemplate");
            return handle;
        }

        /// <summary>The text of a conversation: conversationJson is {"messages": [...],
        /// "tools": [...]?} or a list of messages; addGenerationPrompt appends what opens the
        /// assistant's reply; varsJson (null = none) a JSON object of more template variables.
        /// A template that raises is Status.InvalidArgument with its message.</summary>
        public string Render(string conversationJson, bool addGenerationPrompt = false, string varsJson = null)
        {
            byte[] conv = Utf8.Arg(conversationJson, "conversationJson");
            byte[] vars = Utf8.Encode(varsJson, "varsJson");
            ChatTemplateHandle h = Live();
            byte[] text = Buffers.ReadBytes(delegate(byte[] b, UIntPtr c, out UIntPtr n) {
                return Native.trainrt_chat_template_render(b, c, out n, h, conv, addGenerationPrompt ? 1 : 0, vars);
            }, 256 + 2 * conv.Length, "trainrt_chat_template_render");
            return Utf8.Decode(text, text.Length);
        }

        /// <summary>The ids a reply ends with (generation_config.json's eos_token_id, else
        /// tokenizer_config.json's eos_token), for Session.Generate's stopIds. tokenizer: the
        /// folder's.</summary>
        public int[] StopIds(Tokenizer tokenizer)
        {
            if (tokenizer == null) throw new ArgumentNullException("tokenizer");
            ChatTemplateHandle h = Live();
            TokenizerHandle t = tokenizer.Handle;
            UIntPtr needed;
            Errors.Check(Native.trainrt_chat_template_stop_ids(null, UIntPtr.Zero, out needed, h, t),
                         "trainrt_chat_template_stop_ids");
            while (true)
            {
                int[] ids = new int[checked((int)needed.ToUInt64())];
                Errors.Check(Native.trainrt_chat_template_stop_ids(ids, (UIntPtr)ids.Length, out needed, h, t),
                             "trainrt_chat_template_stop_ids");
                if (needed.ToUInt64() <= (ulong)ids.Length)
                {
                    Array.Resize(ref ids, (int)needed.ToUInt64());
                    return ids;
                }
            }
        }

        public void Dispose() { handle.Dispose(); }
    }
}
