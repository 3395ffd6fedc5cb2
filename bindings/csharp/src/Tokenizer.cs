using System;
using System.Text;

namespace Trainrt
{
    /// <summary>A Hugging Face tokenizer of the byte-level BPE family (a tokenizer.json: GPT-2,
    /// Llama 3 and the like), as libtrainrt reproduces it exactly, or a SentencePiece model (a
    /// tokenizer.model: Llama 2 style). Unlike Config and Session it
    /// is safe to use from several threads at once: the library's tokenizer is immutable.
    /// Dispose frees it (after any call in flight on another thread has returned); the
    /// finalizer frees a forgotten one.</summary>
    public sealed class Tokenizer : IDisposable
    {
        readonly TokenizerHandle handle;

        // Strict: a lone surrogate throws instead of silently becoming U+FFFD.
        static readonly UTF8Encoding StrictUtf8 = new UTF8Encoding(false, true);

        Tokenizer(IntPtr p)
        {
            if (p == IntPtr.Zero) throw new TrainrtException(Status.Internal, "NULL handle", "trainrt_tokenizer_load");
            handle = new TokenizerHandle(p);
        }

        /// <summary>Loads a tokenizer.json or tokenizer.model, or the one in a folder (a
        /// Hugging Face model folder). A file the library cannot reproduce exactly is
        /// Status.Unsupported.</summary>
        public static Tokenizer Load(string path)
        {
            Loading.Require();
            IntPtr p;
            Errors.Check(Native.trainrt_tokenizer_load(out p, Utf8.Arg(path, "path")), "trainrt_tokenizer_load");
            return new Tokenizer(p);
        }

        public TokenizerHandle Handle { get { return Live(); } }

        TokenizerHandle Live()
        {
            if (handle.IsClosed) throw new ObjectDisposedException("Trainrt.Tokenizer");
            return handle;
        }

        /// <summary>The ids of text. No special token is added; the text of an added token
        /// ("&lt;|endoftext|&gt;") becomes its id. A lone surrogate is an ArgumentException.</summary>
        public int[] Encode(string text)
        {
            if (text == null) throw new ArgumentNullException("text");
            byte[] utf8;
            try { utf8 = StrictUtf8.GetBytes(text); }
            catch (EncoderFallbackException e) { throw new ArgumentException("text is not valid UTF-16: " + e.Message, "text", e); }
            return Encode(utf8);
        }

        /// <summary>The ids of UTF-8 bytes; bytes that are not UTF-8 are Status.InvalidArgument
        /// (the library's message names the byte).</summary>
        public int[] Encode(byte[] utf8)
        {
            if (utf8 == null) throw new ArgumentNullException("utf8");
            TokenizerHandle h = Live();
            // Every token covers at least one byte: utf8.Length ids always suffice, so one call.
            int[] ids = new int[utf8.Length];
            while (true)
            {
                UIntPtr needed;
                Errors.Check(Native.trainrt_tokenizer_encode(ids, (UIntPtr)ids.Length, out needed, h, utf8,
                    (UIntPtr)utf8.Length), "trainrt_tokenizer_encode");
                ulong n = needed.ToUInt64();
                if (n <= (ulong)ids.Length)
                {
                    if (n < (ulong)ids.Length) Array.Resize(ref ids, (int)n);
                    return ids;
                }
                ids = new int[checked((int)n)];
            }
        }

        /// <summary>The bytes of ids (each in [0, VocabSize)). They may hold NUL (byte tokens)
        /// and, for a cut-off sequence, end inside a UTF-8 character.</summary>
        public byte[] DecodeBytes(int[] ids)
        {
            if (ids == null) throw new ArgumentNullException("ids");
            TokenizerHandle h = Live();
            return Buffers.ReadBytes(delegate(byte[] b, UIntPtr c, out UIntPtr n) {
                return Native.trainrt_tokenizer_decode(b, c, out n, h, ids, (UIntPtr)ids.Length);
            }, checked(ids.Length * 4 + 16), "trainrt_tokenizer_decode");
        }

        /// <summary>The text of ids: DecodeBytes read as UTF-8 (bytes that are not UTF-8, as at
        /// the end of a cut-off sequence, become U+FFFD).</summary>
        public string Decode(int[] ids)
        {
            byte[] b = DecodeBytes(ids);
            return Utf8.Decode(b, b.Length);
        }

        /// <summary>The largest id plus one (added tokens included): the smallest
        /// model.vocab_size that can train on this tokenizer's shards.</summary>
        public int VocabSize
        {
            get
            {
                int v;
                Errors.Check(Native.trainrt_tokenizer_vocab_size(out v, Live()), "trainrt_tokenizer_vocab_size");
                return v;
            }
        }

        /// <summary>The id of a token given by its text: an added token ("&lt;|endoftext|&gt;") or
        /// a vocabulary entry in its byte-level spelling ("Ġthe"); null when there is none.</summary>
        public int? TokenId(string token)
        {
            int id;
            Errors.Check(Native.trainrt_tokenizer_token_id(out id, Live(), Utf8.Arg(token, "token")),
                         "trainrt_tokenizer_token_id");
            return id < 0 ? (int?)null : id;
        }

        public void Dispose() { handle.Dispose(); }
    }

    /// <summary>Input bytes done of total, reported now and then by Library.PrepareText on its
    /// calling thread. Return true to continue, false to stop (as a ProgressCallback stops
    /// Session.Train): PrepareText then throws TrainrtException with Status.Cancelled and
    /// writes no shard. An exception thrown here stops the run too and is rethrown by
    /// PrepareText once the library has returned.</summary>
    public delegate bool PrepareProgressCallback(long done, long total);

    /// <summary>Options of Library.PrepareText. Tokenizer is required; the rest default to
    /// text inputs, no validation split, all cores and no progress reports.</summary>
    public sealed class PrepareOptions
    {
        /// <summary>A tokenizer.json or tokenizer.model, or a model folder holding one. Its
        /// end-of-text token begins every document: eos_token of the tokenizer_config.json
        /// beside it, else a SentencePiece model's own, else &lt;|endoftext|&gt;,
        /// &lt;|end_of_text|&gt; or &lt;/s&gt;.</summary>
        public string Tokenizer { get; set; }
        /// <summary>null: each input file is a document. Otherwise the inputs are JSON lines
        /// and each line's string field JsonlField is a document.</summary>
        public string JsonlField { get; set; }
        /// <summary>The share of the input bytes, at the end, that goes to val.bin: [0, 1).</summary>
        public double ValFraction { get; set; }
        /// <summary>0 = all cores.</summary>
        public int Threads { get; set; }
        /// <summary>0: one train.bin and val.bin. N: train_000000.bin, train_000001.bin, ...
        /// (and val_*.bin) of at most N tokens each.</summary>
        public long ShardTokens { get; set; }
        public PrepareProgressCallback Progress { get; set; }
        /// <summary>Chat data: Tokenizer is a model folder with a chat template; each input line
        /// is a conversation rendered with it, and mask_train.bin / mask_val.bin hold each
        /// token's loss mask. JsonlField and ShardTokens must be unset.</summary>
        public bool Chat { get; set; }
        /// <summary>Which tokens of a chat example are targets.</summary>
        public LossMask LossMask { get; set; }
        /// <summary>One of the folder's named templates; null = "default".</summary>
        public string ChatTemplate { get; set; }
        /// <summary>A JSON object of more template variables; null = none.</summary>
        public string TemplateVars { get; set; }

        public PrepareOptions() { }
        public PrepareOptions(string tokenizer) { Tokenizer = tokenizer; }
    }
}
