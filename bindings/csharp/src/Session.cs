using System;
using System.Runtime.ExceptionServices;
using System.Runtime.InteropServices;

namespace Trainrt
{
    /// <summary>One training run. Not for concurrent use by two threads (the library answers
    /// Status.Busy), except RequestStop, which is safe from any thread.</summary>
    public sealed partial class Session : IDisposable
    {
        readonly SessionHandle handle;

        /// <summary>Builds model, optimizer, data and backend from a copy of config.</summary>
        public Session(Config config)
        {
            if (config == null) throw new ArgumentNullException("config");
            IntPtr p;
            Errors.Check(Native.trainrt_session_create(out p, config.Handle), "trainrt_session_create");
            handle = new SessionHandle(p);
            // The session logs through the config's sink for its whole life.
            if (config.LogSink != null) handle.KeepAlive.Add(config.LogSink);
        }

        /// <summary>A session from a TOML file.</summary>
        public static Session FromFile(string path)
        {
            using (Config c = Config.FromFile(path)) return new Session(c);
        }

        public SessionHandle Handle { get { return Live(); } }

        SessionHandle Live()
        {
            if (handle.IsClosed) throw new ObjectDisposedException("Trainrt.Session");
            return handle;
        }

        /// <summary>Log sink for this session (overrides the config's / process default).</summary>
        public void SetLog(LogCallback callback, LogLevel minLevel = LogLevel.Info)
        {
            SessionHandle h = Live();
            LogSink sink = callback == null ? null : new LogSink(callback);
            Errors.Check(Native.trainrt_session_set_log(h, LogSink.FnOf(sink), IntPtr.Zero, (int)minLevel),
                         "trainrt_session_set_log");
            if (sink != null) lock (h.KeepAlive) h.KeepAlive.Add(sink);
        }

        /// <summary>One optimizer step on the sampler's batches; the most recent completed
        /// step's figures (on an asynchronous backend they may lag: see Sync).</summary>
        public StepResult Step()
        {
            StepResult r = StepResult.Create();
            Errors.Check(Native.trainrt_session_step(ref r, Live()), "trainrt_session_step");
            return r;
        }

        /// <summary>One step on host tokens: grad_accum * batch_size * (seq_len + 1) ids.</summary>
        public StepResult StepTokens(int[] tokens)
        {
            if (tokens == null) throw new ArgumentNullException("tokens");
            StepResult r = StepResult.Create();
            Errors.Check(Native.trainrt_session_step_tokens(ref r, Live(), tokens, (UIntPtr)tokens.Length),
                         "trainrt_session_step_tokens");
            return r;
        }

        /// <summary>StepTokens training on some targets only (instruction tuning): lossMask holds
        /// grad_accum * batch_size * seq_len bytes, non-zero where the target tokens[k,b,t+1]
        /// counts (null: all count); positions as many values (null: 0 .. seq_len-1 in every
        /// row). The loss is the mean over the step's counted targets.</summary>
        public StepResult StepMasked(int[] tokens, byte[] lossMask, int[] positions = null)
        {
            if (tokens == null) throw new ArgumentNullException("tokens");
            if (lossMask != null && positions != null && lossMask.Length != positions.Length)
                throw new TrainrtException(Status.InvalidArgument,
                    "lossMask holds " + lossMask.Length + " values but positions " + positions.Length +
                    "; both hold grad_accum * batch_size * seq_len", "StepMasked");
            int n = lossMask != null ? lossMask.Length : positions != null ? positions.Length : 0;
            StepResult r = StepResult.Create();
            Errors.Check(Native.trainrt_session_step_masked(ref r, Live(), tokens, (UIntPtr)tokens.Length,
                                                            lossMask, positions, (UIntPtr)n),
                         "trainrt_session_step_masked");
            return r;
        }

        /// <summary>Waits for queued work; returns the last step's figures.</summary>
        public StepResult Sync()
        {
            StepResult r = StepResult.Create();
            Errors.Check(Native.trainrt_session_sync(ref r, Live()), "trainrt_session_sync");
            return r;
        }

        /// <summary>Mean val loss over train.eval_batches windows.</summary>
        public double Eval()
        {
            double loss;
            Errors.Check(Native.trainrt_session_eval(out loss, Live()), "trainrt_session_eval");
            return loss;
        }

        /// <summary>Every token of data.val but the first scored exactly once, in disjoint
        /// windows of train.seq_len targets (the shards one stream; the last window shorter).</summary>
        public EvalResult EvalWhole()
        {
            EvalResult r = EvalResult.Create();
            Errors.Check(Native.trainrt_session_eval_whole(ref r, Live()), "trainrt_session_eval_whole");
            return r;
        }

        /// <summary>EvalWhole over host ids (at least 2) taken as one stream.</summary>
        public EvalResult EvalTokens(int[] tokens)
        {
            if (tokens == null) throw new ArgumentNullException("tokens");
            EvalResult r = EvalResult.Create();
            Errors.Check(Native.trainrt_session_eval_tokens(ref r, Live(), tokens, (UIntPtr)tokens.Length),
                         "trainrt_session_eval_tokens");
            return r;
        }

        /// <summary>EvalWhole over raw text (UTF-8 bytes), tokenized in memory as prepare lays out
        /// one text file: with tokenizer (a tokenizer.json/.model or a model folder) its
        /// end-of-text token, then the text's ids; null: one id per byte.</summary>
        public EvalResult EvalText(byte[] text, string tokenizer = null)
        {
            if (text == null) throw new ArgumentNullException("text");
            EvalResult r = EvalResult.Create();
            Errors.Check(Native.trainrt_session_eval_text(ref r, Live(), text, (UIntPtr)text.Length,
                                                          Utf8.Encode(tokenizer, "tokenizer")),
                         "trainrt_session_eval_text");
            return r;
        }

        public EvalResult EvalText(string text, string tokenizer = null)
        {
            if (text == null) throw new ArgumentNullException("text");
            return EvalText(System.Text.Encoding.UTF8.GetBytes(text), tokenizer);
        }

        /// <summary>Loss on rows of (seqLen + 1) ids, no update; logits (may be null) receives
        /// rows * seqLen * vocab_size floats.</summary>
        public double Forward(int[] tokens, long rows, long seqLen, float[] logits = null)
        {
            if (tokens == null) throw new ArgumentNullException("tokens");
            if (rows < 1 || seqLen < 1 || (long)tokens.Length != checked(rows * (seqLen + 1)))
                throw new ArgumentException("tokens must hold rows * (seqLen + 1) ids", "tokens");
            double loss;
            Errors.Check(Native.trainrt_session_forward(out loss, logits,
                (UIntPtr)(logits == null ? 0 : logits.Length), Live(), tokens, rows, seqLen),
                "trainrt_session_forward");
            return loss;
        }

        /// <summary>The training loop: nSteps more steps (&lt;= 0: until train.steps). Returns
        /// Status.Ok, or Status.Stopped when RequestStop or the callback ended it early. An
        /// exception thrown by the callback stops training and is rethrown here.</summary>
        public Status Train(long nSteps = 0, ProgressCallback callback = null)
        {
            SessionHandle h = Live();
            Exception thrown = null;
            NativeProgressFn fn = null;
            if (callback != null)
            {
                fn = delegate(IntPtr p, IntPtr payload)
                {
                    try
                    {
                        Progress pr = (Progress)Marshal.PtrToStructure(p, typeof(Progress));
                        return callback(pr) ? 0 : 1;
                    }
                    catch (Exception e)
                    {
                        thrown = e;
                        return 1; // never let it cross into C; stop instead
                    }
                };
            }
            int status = Native.trainrt_session_train(h, nSteps, fn, IntPtr.Zero);
            GC.KeepAlive(fn);
            if (thrown != null) ExceptionDispatchInfo.Capture(thrown).Throw();
            return Errors.Check(status, "trainrt_session_train");
        }

        /// <summary>Asks a running Train to stop after its current step. Any thread.</summary>
        public void RequestStop()
        {
            Errors.Check(Native.trainrt_session_request_stop(Live()), "trainrt_session_request_stop");
        }

        public Metrics Metrics()
        {
            Metrics m = Trainrt.Metrics.Create();
            Errors.Check(Native.trainrt_session_metrics(ref m, Live()), "trainrt_session_metrics");
            return m;
        }

        /// <summary>The session's resolved config as TOML.</summary>
        public string ConfigDump()
        {
            SessionHandle h = Live();
            return Buffers.Read(delegate(byte[] b, UIntPtr c, out UIntPtr n) {
                return Native.trainrt_session_config_dump(b, c, out n, h);
            }, "trainrt_session_config_dump");
        }

        /// <summary>Writes a checkpoint: into dir (must not exist), or with dir null/"" into
        /// train.out_dir/step_NNNNNNNN. Returns the directory written.</summary>
        public string Save(string dir = null)
        {
            SessionHandle h = Live();
            byte[] d = Utf8.Encode(dir, "dir");
            // save is not idempotent: query-and-retry would write twice, so one generous buffer.
            byte[] buf = new byte[4096];
            UIntPtr needed;
            Errors.Check(Native.trainrt_session_save(buf, (UIntPtr)buf.Length, out needed, h, d), "trainrt_session_save");
            int n = (int)Math.Min(needed.ToUInt64(), (ulong)buf.Length - 1);
            return Utf8.Decode(buf, n);
        }

        /// <summary>Restores weights, optimizer state, step and sampler from a checkpoint
        /// (or a folder whose `latest` names one).</summary>
        public void Load(string path)
        {
            Errors.Check(Native.trainrt_session_load(Live(), Utf8.Arg(path, "path")), "trainrt_session_load");
        }

        /// <summary>Hugging Face GPT-2 export (model.safetensors + config.json).</summary>
        public void Export(string outDir, DType dtype = DType.F32)
        {
            Errors.Check(Native.trainrt_session_export(Live(), Utf8.Arg(outDir, "outDir"), (int)dtype),
                         "trainrt_session_export");
        }

        /// <summary>A LoRA run's adapters as a Hugging Face PEFT folder
        /// (adapter_model.safetensors + adapter_config.json); Export of such a run writes the
        /// merged model.</summary>
        public void ExportAdapter(string outDir, DType dtype = DType.F32)
        {
            Errors.Check(Native.trainrt_session_export_adapter(Live(), Utf8.Arg(outDir, "outDir"), (int)dtype),
                         "trainrt_session_export_adapter");
        }

        /// <summary>nNew tokens continuing prompt; options null = library defaults.</summary>
        public int[] Sample(int[] prompt, int nNew, SampleOptions? options = null)
        {
            if (prompt == null) throw new ArgumentNullException("prompt");
            if (nNew < 0) throw new ArgumentOutOfRangeException("nNew");
            SampleOptions o = options.HasValue ? options.Value : SampleOptions.Create();
            if (o.StructSize == 0) { o.StructSize = (uint)Marshal.SizeOf(typeof(SampleOptions)); }
            if (o.Version == 0) o.Version = SampleOptions.CurrentVersion;
            int[] output = new int[nNew];
            Errors.Check(Native.trainrt_session_sample(output, (UIntPtr)output.Length, Live(), prompt,
                (UIntPtr)prompt.Length, (UIntPtr)nNew, ref o), "trainrt_session_sample");
            return output;
        }

        /// <summary>Up to maxNew tokens continuing prompt, ending after one of stopIds (the
        /// last id returned; a chat model's end-of-turn: ChatTemplate.StopIds) when one comes.
        /// options null = library defaults; its StopIds fields are replaced by stopIds.</summary>
        public int[] Generate(int[] prompt, int maxNew, SampleOptions? options = null, int[] stopIds = null)
        {
            if (prompt == null) throw new ArgumentNullException("prompt");
            if (maxNew < 0) throw new ArgumentOutOfRangeException("maxNew");
            SampleOptions o = options.HasValue ? options.Value : SampleOptions.Create();
            if (o.StructSize == 0) { o.StructSize = (uint)Marshal.SizeOf(typeof(SampleOptions)); }
            if (o.Version == 0) o.Version = SampleOptions.CurrentVersion;
            int[] output = new int[maxNew];
            GCHandle pin = default(GCHandle);
            try
            {
                o.StopIds = IntPtr.Zero;
                o.NStopIds = UIntPtr.Zero;
                if (stopIds != null && stopIds.Length > 0)
                {
                    pin = GCHandle.Alloc(stopIds, GCHandleType.Pinned);
                    o.StopIds = pin.AddrOfPinnedObject();
                    o.NStopIds = (UIntPtr)stopIds.Length;
                }
                UIntPtr n;
                Errors.Check(Native.trainrt_session_generate(out n, output, (UIntPtr)output.Length, Live(), prompt,
                    (UIntPtr)prompt.Length, (UIntPtr)maxNew, ref o), "trainrt_session_generate");
                Array.Resize(ref output, (int)n.ToUInt64());
                return output;
            }
            finally
            {
                if (pin.IsAllocated) pin.Free();
            }
        }

        /// <summary>Destroys the session (deferred until a call in flight on another thread
        /// returns). Request a stop first if another thread is training.</summary>
        public void Dispose() { handle.Dispose(); }
    }
}
