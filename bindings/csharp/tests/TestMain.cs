// Self-checking test program for the Trainrt binding (no NUnit): each test is a method,
// PASS/FAIL per test, a summary, exit code 1 on any failure.
// Environment (set by tests/bindings/run_binding.sh): TRAINRT_TEST_CONFIG (tiny.toml, 8 steps),
// TRAINRT_TEST_EXPECTED ("STEP LOSS_BITS" lines from the C API), TRAINRT_TEST_TMP (scratch).
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;
using Trainrt;

class AssertFailed : Exception { public AssertFailed(string m) : base(m) { } }

static class T
{
    public static void True(bool c, string what) { if (!c) throw new AssertFailed(what); }
    public static void Eq<X>(X expected, X actual, string what)
    {
        if (!EqualityComparer<X>.Default.Equals(expected, actual))
            throw new AssertFailed(what + ": expected " + expected + ", got " + actual);
    }
    public static E Throws<E>(Action a, string what) where E : Exception
    {
        try { a(); }
        catch (E e) { return e; }
        catch (Exception e) { throw new AssertFailed(what + ": expected " + typeof(E).Name + ", got " + e.GetType().Name + ": " + e.Message); }
        throw new AssertFailed(what + ": expected " + typeof(E).Name + ", nothing thrown");
    }
}

static class Program
{
    static string ConfigPath = Environment.GetEnvironmentVariable("TRAINRT_TEST_CONFIG");
    static string ExpectedPath = Environment.GetEnvironmentVariable("TRAINRT_TEST_EXPECTED");
    static string Tmp = Environment.GetEnvironmentVariable("TRAINRT_TEST_TMP") ?? Path.GetTempPath();

    static Session Open()
    {
        using (Config c = Config.FromFile(ConfigPath)) return new Session(c);
    }

    static void Offset(Type t, string field, int expected)
    {
        T.Eq(expected, (int)Marshal.OffsetOf(t, field), t.Name + "." + field + " offset");
    }

    static void StructLayouts()
    {
        T.Eq(64, Marshal.SizeOf(typeof(StepResult)), "sizeof StepResult");
        T.Eq(128, Marshal.SizeOf(typeof(Metrics)), "sizeof Metrics");
        T.Eq(96, Marshal.SizeOf(typeof(Progress)), "sizeof Progress");
        T.Eq(48, Marshal.SizeOf(typeof(SampleOptions)), "sizeof SampleOptions");
        T.Eq(64, Marshal.SizeOf(typeof(ModelInfo)), "sizeof ModelInfo");
        Offset(typeof(StepResult), "Step", 8); Offset(typeof(StepResult), "Loss", 16);
        Offset(typeof(StepResult), "Tokens", 40); Offset(typeof(StepResult), "Ms", 56);
        Offset(typeof(Metrics), "TokensPerS", 24); Offset(typeof(Metrics), "LastLoss", 56);
        Offset(typeof(Metrics), "BytesReserved", 72); Offset(typeof(Metrics), "LossScale", 88);
        Offset(typeof(Metrics), "ModelFlopsPerToken", 96); Offset(typeof(Metrics), "Mfu", 112); Offset(typeof(Metrics), "WorldSize", 124);
        Offset(typeof(Progress), "Kind", 8); Offset(typeof(Progress), "Step", 16);
        Offset(typeof(Progress), "Loss", 32); Offset(typeof(Progress), "TokensTotal", 56);
        Offset(typeof(Progress), "EtaS", 88);
        Offset(typeof(SampleOptions), "Temperature", 8); Offset(typeof(SampleOptions), "TopK", 16);
        Offset(typeof(SampleOptions), "Seed", 24); Offset(typeof(SampleOptions), "StopIds", 32);
        Offset(typeof(SampleOptions), "NStopIds", 40);
        Offset(typeof(ModelInfo), "FlopsPerToken", 16); Offset(typeof(ModelInfo), "BytesTotal", 48);
        // The library's own initialisers write C's sizeof and the current version.
        var r = new StepResult(); Native_StepInit(ref r);
        T.Eq((uint)Marshal.SizeOf(typeof(StepResult)), r.StructSize, "C sizeof(trainrt_step_result)");
        T.Eq(StepResult.CurrentVersion, r.Version, "step result version");
        var m = new Metrics(); Native_MetricsInit(ref m);
        T.Eq((uint)Marshal.SizeOf(typeof(Metrics)), m.StructSize, "C sizeof(trainrt_metrics)");
        T.Eq(Metrics.CurrentVersion, m.Version, "metrics version");
        var o = new SampleOptions(); Native_SampleInit(ref o);
        var d = SampleOptions.Create();
        T.Eq(d.StructSize, o.StructSize, "C sizeof(trainrt_sample_options)");
        T.Eq(d.Temperature, o.Temperature, "default temperature"); T.Eq(d.Seed, o.Seed, "default seed");
        T.Eq(88, Marshal.SizeOf(typeof(PrepareResult)), "sizeof PrepareResult");
        Offset(typeof(PrepareResult), "Documents", 8); Offset(typeof(PrepareResult), "Bytes", 32);
        Offset(typeof(PrepareResult), "TokenBytes", 40); Offset(typeof(PrepareResult), "EosId", 48);
        var pr = new PrepareResult(); Native_PrepareResultInit(ref pr);
        T.Eq((uint)Marshal.SizeOf(typeof(PrepareResult)), pr.StructSize, "C sizeof(trainrt_prepare_result)");
        T.Eq(PrepareResult.CurrentVersion, pr.Version, "prepare result version");
        // The binding's (internal) trainrt_prepare_options mirror has C's size and offsets.
        Type po = typeof(Tokenizer).Assembly.GetType("Trainrt.PrepareOptionsNative", true);
        IntPtr mem = Marshal.AllocHGlobal(256);
        try
        {
            Native_PrepareOptionsInit(mem);
            T.Eq(Marshal.ReadInt32(mem), Marshal.SizeOf(po), "C sizeof(trainrt_prepare_options)");
        }
        finally { Marshal.FreeHGlobal(mem); }
        Offset(po, "Tokenizer", 8); Offset(po, "ValFraction", 24); Offset(po, "Threads", 32);
        Offset(po, "Progress", 40); Offset(po, "ProgressPayload", 48); Offset(po, "ShardTokens", 56);
        Offset(typeof(PrepareResult), "TrainShards", 56);
        Offset(po, "Chat", 64); Offset(po, "LossMask", 68); Offset(po, "ChatTemplate", 72);
        Offset(po, "TemplateVars", 80); T.Eq(88, Marshal.SizeOf(po), "sizeof trainrt_prepare_options");
        Offset(typeof(PrepareResult), "Examples", 64); Offset(typeof(PrepareResult), "PerTurn", 80);
        // The binding's (internal) trainrt_param_info mirror: 72 bytes, C's offsets.
        Type pi = typeof(Session).Assembly.GetType("Trainrt.ParamInfoNative", true);
        T.Eq(72, Marshal.SizeOf(pi), "sizeof trainrt_param_info");
        Offset(pi, "Role", 8); Offset(pi, "Ndim", 12); Offset(pi, "Shape0", 16); Offset(pi, "Shape3", 40);
        Offset(pi, "Numel", 48); Offset(pi, "Offset", 56); Offset(pi, "Layer", 64); Offset(pi, "Trainable", 68);
        mem = Marshal.AllocHGlobal(256);
        try
        {
            Native_ParamInfoInit(mem);
            T.Eq(Marshal.ReadInt32(mem), Marshal.SizeOf(pi), "C sizeof(trainrt_param_info)");
            T.Eq(1, Marshal.ReadInt32(mem, 4), "param info version");
        }
        finally { Marshal.FreeHGlobal(mem); }
    }

    [DllImport("trainrt", EntryPoint = "trainrt_step_result_init")] static extern void Native_StepInit(ref StepResult r);
    [DllImport("trainrt", EntryPoint = "trainrt_eval_result_init")] static extern void Native_EvalInit(ref EvalResult r);
    [DllImport("trainrt", EntryPoint = "trainrt_metrics_init")] static extern void Native_MetricsInit(ref Metrics m);
    [DllImport("trainrt", EntryPoint = "trainrt_sample_options_init")] static extern void Native_SampleInit(ref SampleOptions o);
    [DllImport("trainrt", EntryPoint = "trainrt_prepare_result_init")] static extern void Native_PrepareResultInit(ref PrepareResult r);
    [DllImport("trainrt", EntryPoint = "trainrt_prepare_options_init")] static extern void Native_PrepareOptionsInit(IntPtr o);
    [DllImport("trainrt", EntryPoint = "trainrt_param_info_init")] static extern void Native_ParamInfoInit(IntPtr p);

    static void VersionAndFeatures()
    {
        T.True(System.Text.RegularExpressions.Regex.IsMatch(Library.Version, @"^\d+\.\d+\.\d+$"), "version " + Library.Version);
        T.Eq(Library.BindingAbiVersion, Library.AbiVersion, "ABI version");
        T.True((Library.BuildFeatures & Features.Cpu) != 0, "CPU feature bit");
        T.Eq("invalid argument", Library.StatusString(Status.InvalidArgument), "status string");
    }

    static void ConfigRoundTrip()
    {
        using (Config c = Config.FromString("[train]\nbatch_size = 3\n[optim]\nlr = 0.005\n"))
        {
            T.Eq(3L, c.GetInt("train.batch_size"), "int from TOML");
            T.Eq(0.005, c.GetDouble("optim.lr"), "double from TOML");
            c.Set("train.steps", "42");
            T.Eq(42L, c.GetInt("train.steps"), "int after Set");
            c.Set("optim.lr", "1e-4");
            T.Eq(1e-4, c.GetDouble("optim.lr"), "double after Set");
            string s = "/tmp/trainrt-ünïcødé-日本";
            c.SetString("train.out_dir", s);
            T.Eq(s, c.GetString("train.out_dir"), "UTF-8 string round trip");
            T.Eq("42", c.GetString("train.steps"), "non-string key as TOML text");
            string dump = c.Dump();
            T.True(dump.Contains("steps = 42"), "dump has the set key");
            T.True(dump.Contains(s), "dump has the UTF-8 path");
            c.Set("train.out_dir", "\"" + new string('x', 1000) + "\"");
            T.Eq(1000, c.GetString("train.out_dir").Length, "string longer than the first buffer");
        }
        using (Config d = new Config())
        {
            T.True(d.GetInt("train.batch_size") > 0, "defaults");
        }
    }

    static void ConfigErrors()
    {
        using (Config c = new Config())
        {
            var e = T.Throws<TrainrtException>(() => c.Set("train.no_such_key", "1"), "unknown key");
            T.Eq(Status.Config, e.Status, "unknown key status");
            T.True(e.NativeMessage.Length > 0 && e.Message.Contains(e.NativeMessage), "library message carried");
            T.True(e.NativeMessage.Contains("no_such_key"), "message names the key: " + e.NativeMessage);
            e = T.Throws<TrainrtException>(() => c.GetInt("optim.lr"), "wrong type");
            T.Eq(Status.Config, e.Status, "wrong type status");
            e = T.Throws<TrainrtException>(() => c.Set("train.batch_size", "[1,"), "bad TOML");
            T.Eq(Status.Config, e.Status, "bad TOML status");
        }
        var io = T.Throws<TrainrtException>(() => Config.FromFile(Path.Combine(Tmp, "missing-ü.toml")), "missing file");
        T.Eq(Status.IO, io.Status, "missing file status");
        T.True(io.NativeMessage.Contains("missing-ü.toml"), "message has the UTF-8 path: " + io.NativeMessage);
        T.Throws<TrainrtException>(() => Config.FromString("[[[", null), "bad TOML string");
    }

    static List<KeyValuePair<long, long>> Expected()
    {
        var list = new List<KeyValuePair<long, long>>();
        foreach (string line in File.ReadAllLines(ExpectedPath))
        {
            string[] f = line.Trim().Split(' ');
            if (f.Length != 2) continue;
            list.Add(new KeyValuePair<long, long>(long.Parse(f[0]),
                     unchecked((long)Convert.ToUInt64(f[1], 16))));
        }
        return list;
    }

    static void LossesMatchCReference()
    {
        var expected = Expected();
        T.True(expected.Count == 8, "8 reference steps");
        using (Session s = Open())
        {
            foreach (var kv in expected)
            {
                s.Step();
                StepResult r = s.Sync();
                T.Eq(kv.Key, r.Step, "step number");
                T.Eq(kv.Value, BitConverter.DoubleToInt64Bits(r.Loss), "loss bits at step " + kv.Key);
                T.True(r.Tokens > 0 && r.TokensTotal == r.Tokens * r.Step, "token counts");
            }
            Metrics m = s.Metrics();
            T.Eq(8L, m.Step, "metrics step");
            T.Eq(BitConverter.Int64BitsToDouble(expected[7].Value), m.LastLoss, "metrics last loss");
            T.True(double.IsNaN(m.LastValLoss), "no eval yet");
            T.True(m.ModelFlopsPerToken > 0, "metrics v3: FLOPs per token");
            T.True(m.PeakFlops == 0 && m.Mfu == 0, "metrics v3: no peak known for the CPU");
            T.True(m.Rank == 0 && m.WorldSize == 1, "metrics v4: alone is rank 0 of 1");
            double val = s.Eval();
            T.True(val > 0 && val < 10, "eval loss " + val);
            // Whole evals: of data.val, of host ids, of text (bytes: the same stream as the ids).
            EvalResult w = s.EvalWhole();
            T.True(w.Tokens > 0 && Math.Abs(w.Perplexity - Math.Exp(w.Loss)) <= 1e-9 * w.Perplexity,
                   "EvalWhole " + w.Loss + " " + w.Perplexity);
            EvalResult et = s.EvalTokens(new int[] { 82, 79, 77, 69, 79 });
            T.True(et.Tokens == 4 && et.Windows == 1, "EvalTokens counts");
            EvalResult ex = s.EvalText("ROMEO");
            T.Eq(BitConverter.DoubleToInt64Bits(et.Loss), BitConverter.DoubleToInt64Bits(ex.Loss), "EvalText = EvalTokens");
            T.Throws<TrainrtException>(() => s.EvalTokens(new int[] { 1 }), "one token");
            T.Throws<ArgumentException>(() => s.EvalText("ab", "t\0k"), "NUL in the tokenizer path");
            var er = new EvalResult(); Native_EvalInit(ref er);
            T.Eq((uint)Marshal.SizeOf(typeof(EvalResult)), er.StructSize, "C sizeof(trainrt_eval_result)");
            T.True(s.ConfigDump().Contains("seq_len = 32"), "session config dump");
        }
    }

    static void LogCallbacks()
    {
        var lines = new List<string>();
        using (Config c = Config.FromFile(ConfigPath))
        {
            c.SetLog((lvl, msg) => { lock (lines) lines.Add(lvl + " " + msg); }, LogLevel.Debug);
            Session s = new Session(c);
            c.Dispose(); // the session keeps the config's sink alive
            GC.Collect(); GC.WaitForPendingFinalizers(); GC.Collect();
            using (s)
            {
                T.True(lines.Count > 0, "session creation logged through the config sink");
                T.True(lines.Exists(l => l.StartsWith("Info ")), "an INFO line");
                int thrownBefore = 0;
                Library.LastCallbackException = null;
                s.SetLog((lvl, msg) => { ++thrownBefore; throw new InvalidOperationException("boom in log"); }, LogLevel.Debug);
                GC.Collect(); GC.WaitForPendingFinalizers();
                s.Train(2); // logs every step; each callback throws, caught in the binding
                T.True(thrownBefore > 0, "throwing log callback was called");
                T.True(Library.LastCallbackException is InvalidOperationException, "exception recorded, not propagated");
                T.Eq(2L, s.Metrics().Step, "training went on");
            }
        }
    }

    static void TrainProgressAndStop()
    {
        using (Session s = Open())
        {
            var seen = new List<Progress>();
            Status st = s.Train(3, p => { seen.Add(p); return true; });
            T.Eq(Status.Ok, st, "train completes");
            T.Eq(3, seen.Count, "one progress per logged step");
            T.Eq(ProgressKind.Step, seen[2].Kind, "kind");
            T.Eq(3L, seen[2].Step, "progress step");
            T.True(seen[2].Loss > 0 && seen[2].StepsTotal == 8, "progress figures");
            var expected = Expected();
            T.Eq(expected[2].Value, BitConverter.DoubleToInt64Bits(seen[2].Loss), "progress loss = C reference");
            st = s.Train(0, p => p.Step < 5);
            T.Eq(Status.Stopped, st, "callback returning false stops");
            T.Eq(5L, s.Metrics().Step, "stopped after step 5");
            var ex = T.Throws<ArgumentException>(() => s.Train(0, p => { throw new ArgumentException("from callback"); }), "callback exception");
            T.Eq("from callback", ex.Message, "original exception rethrown");
            T.Eq(6L, s.Metrics().Step, "stopped after the step in flight");
        }
    }

    static void RequestStopFromAnotherThread()
    {
        using (Config c = Config.FromFile(ConfigPath))
        {
            c.Set("train.steps", "1000000");
            using (Session s = new Session(c))
            {
                var started = new ManualResetEventSlim(false);
                int calls = 0;
                Task<Status> t = Task.Run(() => s.Train(0, p => { Interlocked.Increment(ref calls); started.Set(); return true; }));
                T.True(started.Wait(60000), "training started");
                s.RequestStop();
                T.True(t.Wait(60000), "train returned");
                T.Eq(Status.Stopped, t.Result, "stopped by request");
                long steps = s.Metrics().Step;
                T.True(steps >= 1 && steps < 1000000, "stopped early at " + steps);
                // A stop from a Task while this thread trains.
                started.Reset();
                Task stopper = Task.Run(() => { started.Wait(); s.RequestStop(); });
                Status st = s.Train(0, p => { started.Set(); return true; });
                stopper.Wait();
                T.Eq(Status.Stopped, st, "stopped by a task");
            }
        }
    }

    static void CheckpointRoundTrip()
    {
        string dir = Path.Combine(Tmp, "ckpt-ü-" + Guid.NewGuid().ToString("N"));
        using (Session a = Open())
        using (Session b = Open())
        {
            a.Step(); a.Step(); a.Step();
            string written = a.Save(dir);
            T.Eq(Path.GetFullPath(dir), Path.GetFullPath(written), "saved where asked");
            T.True(Directory.Exists(dir), "checkpoint dir exists");
            var e = T.Throws<TrainrtException>(() => a.Save(dir), "save over an existing dir");
            T.Eq(Status.IO, e.Status, "existing dir status");
            b.Load(dir);
            T.Eq(3L, b.Metrics().Step, "step restored");
            long x = BitConverter.DoubleToInt64Bits(a.Step().Loss);
            long y = BitConverter.DoubleToInt64Bits(b.Step().Loss);
            T.Eq(x, y, "resumed step is bit-identical");
            using (Config c = Config.FromCheckpoint(dir))
                T.Eq(32L, c.GetInt("train.seq_len"), "config from checkpoint");
            var bad = T.Throws<TrainrtException>(() => b.Load(Path.Combine(Tmp, "nope")), "load missing");
            T.True(bad.Status < 0 && bad.NativeMessage.Length > 0, "load error has a message");
            string hf = Path.Combine(Tmp, "hf-" + Guid.NewGuid().ToString("N"));
            a.Export(hf, DType.BF16);
            T.True(File.Exists(Path.Combine(hf, "model.safetensors")), "session export");
            string hf2 = hf + "-ck";
            Library.CheckpointExport(dir, hf2, DType.F32);
            T.True(File.Exists(Path.Combine(hf2, "config.json")), "checkpoint export");
            // No LoRA adapters in this run: nothing to export as an adapter.
            T.Throws<TrainrtException>(() => a.ExportAdapter(hf + "-adapter"), "adapter export without LoRA");
            T.Throws<TrainrtException>(() => Library.CheckpointExportAdapter(dir, hf + "-adapter", DType.F32),
                                       "checkpoint adapter export without LoRA");
            T.Eq("", Library.CheckpointLatest(Path.Combine(Tmp, "empty-" + Guid.NewGuid().ToString("N"))), "no latest yet");
        }
        // Into out_dir with `latest`.
        string outDir = Path.Combine(Tmp, "out-" + Guid.NewGuid().ToString("N"));
        using (Config c = Config.FromFile(ConfigPath))
        {
            c.SetString("train.out_dir", outDir);
            using (Session s = new Session(c))
            {
                s.Step();
                string w = s.Save();
                T.True(w.Contains("step_00000001"), "auto name " + w);
                T.Eq(Path.GetFullPath(w), Path.GetFullPath(Library.CheckpointLatest(outDir)), "latest names it");
            }
        }
    }

    static void ForwardSampleStepTokens()
    {
        using (Session s = Open())
        {
            int rows = 2, seq = 8, vocab = 256;
            int[] tok = new int[rows * (seq + 1)];
            for (int i = 0; i < tok.Length; ++i) tok[i] = (i * 7 + 65) % vocab;
            float[] logits = new float[rows * seq * vocab];
            double loss = s.Forward(tok, rows, seq, logits);
            T.True(loss > 0 && Math.Abs(loss - Math.Log(256)) < 1.0, "initial loss near ln 256: " + loss);
            T.True(Array.Exists(logits, v => v != 0), "logits written");
            T.Eq(loss, s.Forward(tok, rows, seq), "forward without logits, same loss");
            var e = T.Throws<TrainrtException>(() => s.Forward(new int[] { 1, 999 }, 1, 1), "token out of range");
            T.Eq(Status.InvalidArgument, e.Status, "out of range status");

            int[] batch = new int[4 * 33];
            for (int i = 0; i < batch.Length; ++i) batch[i] = (i * 13) % vocab;
            StepResult r = s.StepTokens(batch);
            r = s.Sync();
            T.Eq(1L, r.Step, "step_tokens step");
            T.Throws<TrainrtException>(() => s.StepTokens(new int[5]), "wrong token count");

            using (Session m1 = Open())
            using (Session m2 = Open())
            {
                byte[] ones = new byte[4 * 32];
                for (int i = 0; i < ones.Length; ++i) ones[i] = 1;
                StepResult t1 = m1.StepTokens(batch);
                StepResult t2 = m2.StepMasked(batch, ones);
                T.Eq(BitConverter.DoubleToInt64Bits(t1.Loss), BitConverter.DoubleToInt64Bits(t2.Loss),
                     "a mask of all ones is step_tokens bit for bit");
                var z = T.Throws<TrainrtException>(() => m2.StepMasked(batch, new byte[ones.Length]),
                                                   "a mask that counts nothing");
                T.Eq(Status.InvalidArgument, z.Status, "nothing counted: invalid argument");
                T.Throws<TrainrtException>(() => m2.StepMasked(batch, ones, new int[3]), "positions' length");
            }

            var o = SampleOptions.Create(); o.Seed = 42; o.TopK = 10;
            int[] a = s.Sample(new[] { 72, 101 }, 20, o);
            int[] b = s.Sample(new[] { 72, 101 }, 20, o);
            T.Eq(20, a.Length, "sample length");
            T.True(Array.TrueForAll(a, v => v >= 0 && v < vocab), "ids in range");
            T.Eq(string.Join(",", a), string.Join(",", b), "same seed, same tokens");
            o.Temperature = 0;
            T.Eq(5, s.Sample(new[] { 72 }, 5, o).Length, "greedy");
            T.Eq(3, s.Sample(new[] { 72 }, 3).Length, "default options");
        }
    }

    static void ModelInfoAndPrepare()
    {
        using (Config c = Config.FromFile(ConfigPath))
        {
            ModelInfo mi = c.ModelInfo();
            T.True(mi.Parameters > 0, "parameters");
            T.Eq(mi.BytesParameters + mi.BytesOptimizer + mi.BytesActivations, mi.BytesTotal, "bytes total");
            T.Eq(mi.Parameters * 4, mi.BytesParameters, "fp32 weights");
        }
        string text = Path.Combine(Tmp, "text-" + Guid.NewGuid().ToString("N") + ".txt");
        File.WriteAllText(text, new string('a', 900) + new string('b', 100));
        long tr, va;
        string dataDir = Path.Combine(Tmp, "data-ü-" + Guid.NewGuid().ToString("N"));
        Library.PrepareBytes(text, dataDir, 0.1, out tr, out va);
        T.Eq(1000L, tr + va, "all bytes tokenized");
        T.True(va > 0 && va < tr, "val split");
        T.True(File.Exists(Path.Combine(dataDir, "train.bin")), "train.bin written");
    }

    // ------------------------------------------------------------------ tokenizers

    /// GPT-2's byte alphabet: byte b stands for itself when printable, else U+0100 onward.
    static char ByteChar(int b)
    {
        Func<int, bool> keep = k => (k >= '!' && k <= '~') || (k >= 0xA1 && k <= 0xAC) || k >= 0xAE;
        if (keep(b)) return (char)b;
        int next = 0x100;
        for (int k = 0; k < b; ++k) if (!keep(k)) ++next;
        return (char)next;
    }

    /// Writes dir/tokenizer.json, the byte-level BPE of tests/unit/capi/capi_test_util.h
    /// (tiny_tokenizer_json): bytes are ids 0..255; "he" 256, "ll" 257, "hell" 258, "hello" 259;
    /// "<|eot|>" 300. Returns the file's path.
    static string WriteTinyTokenizer(string dir)
    {
        Directory.CreateDirectory(dir);
        var vocab = new System.Text.StringBuilder();
        for (int b = 0; b < 256; ++b)
        {
            char c = ByteChar(b);
            vocab.Append('"');
            if (c == '"' || c == '\\') vocab.Append('\\');
            vocab.Append(c).Append("\": ").Append(b).Append(", ");
        }
        vocab.Append("\"he\": 256, \"ll\": 257, \"hell\": 258, \"hello\": 259");
        string json = "{\"added_tokens\": [{\"id\": 300, \"content\": \"<|eot|>\", \"special\": true}],\n" +
            "  \"normalizer\": null,\n" +
            "  \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true},\n" +
            "  \"decoder\": {\"type\": \"ByteLevel\"},\n" +
            "  \"model\": {\"type\": \"BPE\", \"vocab\": {" + vocab + "}, \"merges\": [\"h e\", \"l l\", \"he ll\", \"hell o\"]}}";
        string path = Path.Combine(dir, "tokenizer.json");
        File.WriteAllText(path, json, new System.Text.UTF8Encoding(false));
        return path;
    }

    static string Ids(int[] ids) { return "[" + string.Join(", ", ids) + "]"; }

    const string ChatTemplateText =
        "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|eot|>{% endfor %}" +
        "{% if add_generation_prompt %}<|assistant|>{% endif %}";
    const string Conversation =
        "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"yo\"}]}";

    /// A model folder: the tiny tokenizer and a tokenizer_config.json (config, or the template
    /// above with eos_token <|eot|>).
    static string ChatFolder(string config = null)
    {
        string dir = Path.Combine(Tmp, "chat-" + Guid.NewGuid().ToString("N"));
        WriteTinyTokenizer(dir);
        File.WriteAllText(Path.Combine(dir, "tokenizer_config.json"),
            config ?? "{\"eos_token\": \"<|eot|>\", \"chat_template\": \"" + ChatTemplateText + "\"}");
        return dir;
    }

    static void ChatTemplateRenderAndStopIds()
    {
        string dir = ChatFolder();
        using (ChatTemplate t = ChatTemplate.Load(dir))
        using (Tokenizer tok = Tokenizer.Load(dir))
        {
            T.Eq("<|user|>hi<|eot|><|assistant|>yo<|eot|>", t.Render(Conversation), "render");
            string user = "[{\"role\": \"user\", \"content\": \"hi\"}]";
            T.Eq("<|user|>hi<|eot|><|assistant|>", t.Render(user, true), "render, generation prompt");
            T.Eq("<|user|>hi<|eot|>", t.Render(user, false, "{\"x\": 1}"), "render with variables");
            var e = T.Throws<TrainrtException>(() => t.Render("[1"), "bad JSON");
            T.Eq(Status.InvalidArgument, e.Status, "bad JSON status");
            e = T.Throws<TrainrtException>(() => t.Render(user, false, "[]"), "vars not an object");
            T.True(e.Message.Contains("vars_json"), "message names vars_json: " + e.Message);
            T.Eq("[300]", Ids(t.StopIds(tok)), "stop ids from eos_token");
            File.WriteAllText(Path.Combine(dir, "generation_config.json"), "{\"eos_token_id\": [300, 10, 259]}");
            T.Eq("[300, 10, 259]", Ids(t.StopIds(tok)), "stop ids from generation_config.json");
        }
        var n = T.Throws<TrainrtException>(() => ChatTemplate.Load(dir, "nope"), "missing name");
        T.True(n.Message.Contains("nope"), "message names the template: " + n.Message);
        T.Throws<TrainrtException>(() => ChatTemplate.Load(ChatFolder("{\"eos_token\": \"<|eot|>\"}")), "no template");
        ChatTemplate d = ChatTemplate.Load(dir);
        d.Dispose();
        d.Dispose();
        T.Throws<ObjectDisposedException>(() => d.Render("[]"), "render after Dispose");
    }

    static void GenerateStopsAtAStopId()
    {
        using (Session s = Open())
        {
            s.Step();
            int[] prompt = { 82, 79, 77, 69, 79, 58 };
            SampleOptions greedy = SampleOptions.Create();
            greedy.Temperature = 0;
            int[] a = s.Sample(prompt, 6, greedy);
            T.Eq(Ids(a), Ids(s.Generate(prompt, 6, greedy)), "no stop ids: sample's ids");
            T.Eq(Ids(new[] { a[0] }), Ids(s.Generate(prompt, 6, greedy, new[] { a[0] })), "stops after the stop id");
            T.Eq(0, s.Generate(prompt, 0, null, new[] { 1 }).Length, "max_new 0");
            T.Throws<TrainrtException>(() => s.Generate(new int[0], 4), "empty prompt");
        }
    }

    static void PrepareTextChat()
    {
        string model = ChatFolder();
        string src = Path.Combine(model, "chat.jsonl");
        File.WriteAllText(src, Conversation + "\n");
        string outDir = Path.Combine(model, "data");
        var o = new PrepareOptions(model) { Chat = true };
        PrepareResult r = Library.PrepareText(new[] { src }, outDir, o);
        // <|user|> 8 bytes, hi 2, <|eot|>, <|assistant|> 13, yo 2, <|eot|>: 27 tokens.
        T.Eq(1L, r.Documents, "conversations"); T.Eq(1L, r.Examples, "examples");
        T.Eq(27L, r.TrainTokens, "tokens"); T.Eq(3L, r.TargetTokens, "targets"); T.Eq(0L, r.PerTurn, "per turn");
        byte[] b = File.ReadAllBytes(Path.Combine(outDir, "mask_train.bin"));
        int n = BitConverter.ToInt32(b, 8);
        var mask = new int[n];
        for (int i = 0; i < n; ++i) mask[i] = BitConverter.ToUInt16(b, 1024 + 2 * i);
        var want = new int[27];
        want[0] = 2; // begins the example
        want[24] = want[25] = want[26] = 1; // y, o, <|eot|>
        T.Eq(Ids(want), Ids(mask), "mask_train.bin");
        o.LossMask = LossMask.All;
        T.Eq(26L, Library.PrepareText(new[] { src }, outDir, o).TargetTokens, "LossMask.All");
        o.ShardTokens = 100;
        var e = T.Throws<TrainrtException>(() => Library.PrepareText(new[] { src }, outDir, o), "chat with shards");
        T.Eq(Status.InvalidArgument, e.Status, "chat with shards status");
    }

    static void TokenizerEncodeDecode()
    {
        string dir = Path.Combine(Tmp, "tok-" + Guid.NewGuid().ToString("N"));
        using (Tokenizer tok = Tokenizer.Load(WriteTinyTokenizer(dir)))
        {
            int[] ids = tok.Encode("hello hello<|eot|>");
            T.Eq("[259, 32, 259, 300]", Ids(ids), "encode");
            T.Eq("hello hello<|eot|>", tok.Decode(ids), "decode");
            string odd = "a\0b 日"; // a NUL and a CJK character
            int[] oddIds = tok.Encode(odd);
            T.Eq(odd, tok.Decode(oddIds), "round trip with a NUL");
            byte[] oddBytes = tok.DecodeBytes(oddIds);
            T.Eq(7, oddBytes.Length, "decoded bytes");
            T.Eq(0, (int)oddBytes[1], "the NUL byte kept");
            // A cut-off sequence: 日 is three byte tokens; the first alone is one byte.
            int[] cjk = tok.Encode("日");
            T.Eq(3, cjk.Length, "three byte tokens");
            T.Eq("E6", BitConverter.ToString(tok.DecodeBytes(new[] { cjk[0] })), "cut bytes");
            T.Eq("\uFFFD", tok.Decode(new[] { cjk[0] }), "cut text");
            T.Eq(0, tok.Encode("").Length, "empty text");
            T.Eq("", tok.Decode(new int[0]), "no ids");
            var sb = new System.Text.StringBuilder();
            for (int i = 0; i < 500; ++i) sb.Append("hello world ");
            string longText = sb.ToString();
            T.Eq(longText, tok.Decode(tok.Encode(longText)), "long text round trip");
            T.Eq(301, tok.VocabSize, "vocab size");
            T.Eq((int?)300, tok.TokenId("<|eot|>"), "token id <|eot|>");
            T.Eq((int?)258, tok.TokenId("hell"), "token id hell");
            T.Eq((int?)null, tok.TokenId("not a token"), "absent token");
        }
        // A model folder holding a tokenizer.json loads too.
        using (Tokenizer tok = Tokenizer.Load(dir)) T.Eq(301, tok.VocabSize, "loaded from the folder");
    }

    static void TokenizerErrors()
    {
        string dir = Path.Combine(Tmp, "tok-err-" + Guid.NewGuid().ToString("N"));
        WriteTinyTokenizer(dir);
        var e = T.Throws<TrainrtException>(() => Tokenizer.Load(Path.Combine(dir, "missing.json")), "missing file");
        T.Eq(Status.IO, e.Status, "missing file status");
        T.True(e.NativeMessage.Contains("missing.json"), "message names the file: " + e.NativeMessage);
        Tokenizer tok = Tokenizer.Load(dir);
        e = T.Throws<TrainrtException>(() => tok.Encode(new byte[] { (byte)'o', (byte)'k', 0xFF }), "invalid UTF-8");
        T.Eq(Status.InvalidArgument, e.Status, "invalid UTF-8 status");
        T.True(e.NativeMessage.Contains("byte 2"), "message names the byte: " + e.NativeMessage);
        e = T.Throws<TrainrtException>(() => tok.DecodeBytes(new[] { 301 }), "id out of range");
        T.Eq(Status.InvalidArgument, e.Status, "id out of range status");
        T.Throws<ArgumentException>(() => tok.Encode("lone \uD800 surrogate"), "lone surrogate");
        T.Eq("[259]", Ids(tok.Encode("hello")), "usable after errors");
        tok.Dispose();
        tok.Dispose(); // twice is fine
        T.Throws<ObjectDisposedException>(() => tok.Encode("a"), "encode after dispose");
        T.Throws<ObjectDisposedException>(() => GC.KeepAlive(tok.VocabSize), "vocab size after dispose");
        T.Throws<ObjectDisposedException>(() => tok.TokenId("a"), "token id after dispose");
        // Tokenizers dropped without Dispose are released by the finalizer.
        for (int i = 0; i < 3; ++i) Tokenizer.Load(dir);
        GC.Collect(); GC.WaitForPendingFinalizers();
    }

    static void TokenizerManyThreadsAtOnce()
    {
        string dir = Path.Combine(Tmp, "tok-threads-" + Guid.NewGuid().ToString("N"));
        using (Tokenizer tok = Tokenizer.Load(WriteTinyTokenizer(dir)))
        {
            const string text = "hello world, hello <|eot|> again\n日本";
            string want = Ids(tok.Encode(text));
            var start = new ManualResetEventSlim(false);
            var tasks = new List<Task<string>>();
            for (int k = 0; k < 4; ++k)
                tasks.Add(Task.Factory.StartNew(() =>
                {
                    start.Wait();
                    for (int rep = 0; rep < 200; ++rep)
                    {
                        int[] ids = tok.Encode(text);
                        if (Ids(ids) != want) return "ids " + Ids(ids);
                        if (tok.Decode(ids) != text) return "text " + tok.Decode(ids);
                    }
                    return "ok";
                }, TaskCreationOptions.LongRunning));
            start.Set();
            foreach (var t in tasks) T.Eq("ok", t.Result, "same ids on every thread");
        }
    }

    static void PrepareTextShards()
    {
        string dir = Path.Combine(Tmp, "prep-text-" + Guid.NewGuid().ToString("N"));
        WriteTinyTokenizer(dir);
        File.WriteAllText(Path.Combine(dir, "tokenizer_config.json"), "{\"eos_token\": \"<|eot|>\"}");
        // 18 bytes each: ValFraction 0.5 cuts at b's first byte, so b is val, whole.
        string a = Path.Combine(dir, "a.txt"), b = Path.Combine(dir, "b.txt");
        File.WriteAllText(a, "hello\nhello hello\n");
        File.WriteAllText(b, "hello\nworld hello\n");
        string outDir = Path.Combine(dir, "shards");
        var reports = new List<long[]>();
        PrepareResult r = Library.PrepareText(new[] { a, b }, outDir, new PrepareOptions(dir)
        {
            ValFraction = 0.5,
            Threads = 2,
            Progress = (done, total) => { reports.Add(new[] { done, total }); return true; },
        });
        T.Eq(2L, r.Documents, "documents");
        T.Eq(300, r.EosId, "eos id");
        T.Eq(301, r.VocabSize, "vocab size");
        T.Eq(2, r.TokenBytes, "token bytes");
        T.Eq(36L, r.Bytes, "bytes");
        T.True(r.TrainTokens > 0 && r.ValTokens > 0, "both splits");
        T.True(File.Exists(Path.Combine(outDir, "train.bin")), "train.bin");
        T.True(File.Exists(Path.Combine(outDir, "val.bin")), "val.bin");
        T.True(reports.Count > 0 && reports[reports.Count - 1][0] == 36 && reports[reports.Count - 1][1] == 36,
               "last progress report is 36 of 36");
        T.Eq(1, r.TrainShards, "one train file");

        // Numbered shards of at most 2 tokens; the single files of the first run are removed.
        PrepareResult s = Library.PrepareText(new[] { a, b }, outDir,
                                              new PrepareOptions(dir) { ValFraction = 0.5, ShardTokens = 2 });
        T.Eq(r.TrainTokens, s.TrainTokens, "same tokens");
        T.Eq((r.TrainTokens + 1) / 2, (long)s.TrainShards, "train shards of 2 tokens");
        T.True(File.Exists(Path.Combine(outDir, "train_000000.bin")), "train_000000.bin");
        T.True(!File.Exists(Path.Combine(outDir, "train.bin")), "the earlier train.bin is removed");

        // JSON lines, the tokenizer file itself, no progress.
        string jl = Path.Combine(dir, "docs.jsonl");
        File.WriteAllText(jl, "{\"text\": \"hello\"}\n{\"text\": \"hello hello\"}\n");
        var o = new PrepareOptions(Path.Combine(dir, "tokenizer.json")) { JsonlField = "text" };
        r = Library.PrepareText(new List<string> { jl }, Path.Combine(dir, "jl"), o);
        T.Eq(2L, r.Documents, "jsonl documents");
        T.Eq(6L, r.TrainTokens, "jsonl train tokens");
        var e = T.Throws<TrainrtException>(() => Library.PrepareText(new[] { Path.Combine(dir, "none.txt") },
            Path.Combine(dir, "x"), o), "missing input");
        T.Eq(Status.IO, e.Status, "missing input status");
        e = T.Throws<TrainrtException>(() => Library.PrepareText(new string[0], Path.Combine(dir, "x"), o), "no inputs");
        T.Eq(Status.InvalidArgument, e.Status, "no inputs status");
        T.Throws<ArgumentNullException>(() => Library.PrepareText(new[] { a }, Path.Combine(dir, "x"), new PrepareOptions()),
            "no tokenizer");
        var thrown = T.Throws<InvalidOperationException>(() => Library.PrepareText(new[] { a }, Path.Combine(dir, "p"),
            new PrepareOptions(dir) { Progress = (done, total) => { throw new InvalidOperationException("boom in progress"); } }),
            "progress exception");
        T.Eq("boom in progress", thrown.Message, "original exception rethrown");
        T.True(!File.Exists(Path.Combine(Path.Combine(dir, "p"), "train.bin")), "no train.bin after the exception");
    }

    static void PrepareTextProgressCanStop()
    {
        string dir = Path.Combine(Tmp, "prep-stop-" + Guid.NewGuid().ToString("N"));
        WriteTinyTokenizer(dir);
        File.WriteAllText(Path.Combine(dir, "tokenizer_config.json"), "{\"eos_token\": \"<|eot|>\"}");
        string a = Path.Combine(dir, "a.txt");
        File.WriteAllText(a, "hello\nhello hello\n");
        string outDir = Path.Combine(dir, "out");
        int calls = 0;
        var e = T.Throws<TrainrtException>(() => Library.PrepareText(new[] { a }, outDir,
            new PrepareOptions(dir) { Progress = (done, total) => { ++calls; return false; } }),
            "stopped by progress");
        T.Eq(Status.Cancelled, e.Status, "stop status");
        T.Eq(1, calls, "progress calls");
        T.True(!File.Exists(Path.Combine(outDir, "train.bin")), "no train.bin after a stop");
        T.True(!File.Exists(Path.Combine(outDir, "val.bin")), "no val.bin after a stop");
    }

    static bool SameBits(float[] a, float[] b)
    {
        if (a.Length != b.Length) return false;
        for (int i = 0; i < a.Length; ++i)
            if (BitConverter.ToInt32(BitConverter.GetBytes(a[i]), 0) != BitConverter.ToInt32(BitConverter.GetBytes(b[i]), 0))
                return false;
        return true;
    }

    static void ParamsList()
    {
        using (Config c = Config.FromFile(ConfigPath))
        using (Session s = new Session(c))
        {
            long tensors, numel;
            s.ParamCount(out tensors, out numel);
            ParamInfo[] ps = s.Params();
            T.Eq(tensors, (long)ps.Length, "one ParamInfo per tensor");
            T.True(tensors > 2, "tensors " + tensors);
            ParamInfo wte = ps[0];
            T.Eq("wte.weight", wte.Name, "first tensor");
            T.Eq(ParamRole.TokenEmbedding, wte.Role, "wte role");
            T.Eq("256,32", string.Join(",", wte.Shape), "wte shape");
            T.Eq(2, wte.Ndim, "wte ndim");
            T.Eq(256L * 32, wte.Numel, "wte numel");
            T.Eq(0L, wte.Offset, "wte offset");
            T.Eq(-1, wte.Layer, "wte layer");
            T.True(wte.Trainable, "wte trainable");
            T.Eq(ParamRole.PositionEmbedding, ps[1].Role, "wpe role");
            long next = 0;
            bool linear = false, layer1 = false;
            foreach (ParamInfo p in ps)
            {
                T.Eq(next, p.Offset, p.Name + " starts where the previous ends");
                long prod = 1;
                foreach (long d in p.Shape) prod *= d;
                T.Eq(p.Numel, prod, p.Name + " numel = product of shape");
                T.True(p.Ndim == 1 || p.Ndim == 2, p.Name + " ndim");
                T.True(p.Layer >= -1 && p.Layer <= 1, p.Name + " layer");
                linear |= p.Role == ParamRole.Linear;
                layer1 |= p.Layer == 1;
                next += p.Numel;
            }
            T.Eq(numel, next, "offsets sum to the flat buffer's size");
            T.True(linear && layer1, "a linear weight, a tensor of block 1");
            T.Eq(c.ModelInfo().Parameters, numel, "model info parameters");
            T.Eq(ps[1].ToString(), s.Param(1).ToString(), "Param(i)");
            var e = T.Throws<TrainrtException>(() => s.Param(tensors), "index out of range");
            T.Eq(Status.InvalidArgument, e.Status, "out of range status");
        }
    }

    static void ParamsReadWrite()
    {
        using (Session s = Open())
        {
            s.Step();
            float[] flat = s.ReadParams();
            var concat = new List<float>();
            foreach (ParamInfo p in s.Params())
            {
                float[] t = s.ReadParams(p.Name);
                T.Eq(p.Numel, (long)t.Length, p.Name + " length");
                float[] slice = new float[p.Numel];
                Array.Copy(flat, p.Offset, slice, 0, p.Numel);
                T.True(SameBits(slice, t), p.Name + " = its slice of the flat buffer");
                concat.AddRange(t);
            }
            T.True(SameBits(flat, concat.ToArray()), "flat = named reads concatenated");

            double before = s.Eval();
            float[] orig = s.ReadParams("wte.weight");
            float[] scaled = Array.ConvertAll(orig, v => v * 3 + 0.01f);
            s.WriteParams(scaled, "wte.weight");
            T.True(SameBits(scaled, s.ReadParams("wte.weight")), "read after write");
            double changed = s.Eval();
            T.True(BitConverter.DoubleToInt64Bits(changed) != BitConverter.DoubleToInt64Bits(before),
                   "eval sees the write: " + changed + " vs " + before);
            s.WriteParams(orig, "wte.weight");
            T.Eq(BitConverter.DoubleToInt64Bits(before), BitConverter.DoubleToInt64Bits(s.Eval()),
                 "writing the original back restores eval bitwise");
            s.WriteParams(s.ReadParams());
            T.Eq(BitConverter.DoubleToInt64Bits(before), BitConverter.DoubleToInt64Bits(s.Eval()),
                 "flat write-back");
            T.True(!double.IsNaN(s.Step().Loss), "training goes on");
        }
    }

    static void ParamsRefusedWrites()
    {
        using (Session s = Open())
        {
            float[] before = s.ReadParams();
            float[] wte = s.ReadParams("wte.weight");
            var e = T.Throws<TrainrtException>(() => s.WriteParams(new float[wte.Length - 1], "wte.weight"), "short tensor");
            T.Eq(Status.InvalidArgument, e.Status, "size mismatch status");
            T.True(e.NativeMessage.Contains("wte.weight"), "size message names the tensor: " + e.NativeMessage);
            e = T.Throws<TrainrtException>(() => s.WriteParams(new float[3]), "short flat buffer");
            T.True(e.NativeMessage.Contains(before.Length.ToString()), "size message says the size: " + e.NativeMessage);
            T.Eq(Status.InvalidArgument, T.Throws<TrainrtException>(() => s.WriteParams(new float[0]), "empty").Status, "empty status");
            T.Throws<ArgumentNullException>(() => s.WriteParams(null), "null values");

            float[] poisoned = (float[])before.Clone();
            poisoned[poisoned.Length - 1] = float.NaN;
            e = T.Throws<TrainrtException>(() => s.WriteParams(poisoned), "NaN");
            T.Eq(Status.NonFinite, e.Status, "NaN status");
            T.Eq(-13, (int)e.Status, "TRAINRT_ERR_NON_FINITE");
            float[] inf = (float[])wte.Clone();
            inf[3] = float.PositiveInfinity;
            T.Eq(Status.NonFinite, T.Throws<TrainrtException>(() => s.WriteParams(inf, "wte.weight"), "inf").Status, "inf status");

            e = T.Throws<TrainrtException>(() => s.ReadParams("wte.weigth"), "unknown name");
            T.Eq(Status.InvalidArgument, e.Status, "unknown name status");
            T.True(e.NativeMessage.Contains("did you mean") && e.NativeMessage.Contains("wte.weight"),
                   "suggests the closest name: " + e.NativeMessage);
            e = T.Throws<TrainrtException>(() => s.WriteParams(wte, "wte.weigth"), "unknown name write");
            T.True(e.NativeMessage.Contains("did you mean"), "write suggests too: " + e.NativeMessage);
            T.Throws<ArgumentException>(() => s.ReadParams("wte.weight\0x"), "NUL in a name");

            T.True(SameBits(before, s.ReadParams()), "refused writes left the weights alone");
        }
    }

    static void MetadataRoundTrip()
    {
        string dir = Path.Combine(Tmp, "meta-" + Guid.NewGuid().ToString("N"));
        using (Session a = Open())
        using (Session b = Open())
        {
            string v;
            T.Eq(0, a.MetadataKeys().Length, "no keys yet");
            T.True(!a.TryGetMetadata("client", out v) && v == null, "absent key");
            string longValue = new string('z', 5000);
            a.SetMetadata("run.name", "tiny ünïcødé");
            a.SetMetadata("client", "7");
            a.SetMetadata("Zeta-1", "");
            a.SetMetadata("long_value", longValue);
            a.SetMetadata("client", "8");
            T.True(a.TryGetMetadata("client", out v) && v == "8", "replaced value");
            T.True(a.TryGetMetadata("Zeta-1", out v) && v == "", "empty value is found");
            T.True(a.TryGetMetadata("long_value", out v) && v == longValue, "long value");
            T.Eq("Zeta-1,client,long_value,run.name", string.Join(",", a.MetadataKeys()), "sorted keys");
            a.RemoveMetadata("long_value");
            a.RemoveMetadata("never-set");
            T.True(!a.TryGetMetadata("long_value", out v), "removed");
            var e = T.Throws<TrainrtException>(() => a.SetMetadata("a key", "v"), "bad key");
            T.Eq(Status.InvalidArgument, e.Status, "bad key status");
            T.True(e.NativeMessage.Length > 0, "bad key message");
            T.Throws<ArgumentNullException>(() => a.SetMetadata("k", null), "null value");
            T.Throws<ArgumentException>(() => a.SetMetadata("k", "a\0b"), "NUL in a value");

            a.Step();
            a.Save(dir);
            b.SetMetadata("replaced", "by the load");
            b.Load(dir);
            T.Eq("Zeta-1,client,run.name", string.Join(",", b.MetadataKeys()), "keys after load");
            T.True(b.TryGetMetadata("run.name", out v) && v == "tiny ünïcødé", "UTF-8 value after load");
            T.True(!b.TryGetMetadata("replaced", out v), "load replaces the session's metadata");
            T.True(SameBits(a.ReadParams(), b.ReadParams()), "loaded weights");
        }
    }

    // The refusal of a string argument holding a NUL: an ArgumentException naming the
    // parameter and the byte (C would see only the part before it: a path "x\0y" names "x").
    static void RefusesNul(Action a, string param, string prefix, string what)
    {
        var e = T.Throws<ArgumentException>(a, what);
        T.Eq(param, e.ParamName, what + ": parameter");
        int at = System.Text.Encoding.UTF8.GetByteCount(prefix);
        T.True(e.Message.Contains(param + " holds a NUL character at byte " + at + " "), what + ": message " + e.Message);
    }

    // Every string argument that becomes a C string refuses a NUL before any library call; the
    // same call without it works. Each refused argument has a prefix the library would accept.
    static void NulInStringArguments()
    {
        string dir = Path.Combine(Tmp, "nul-ü-" + Guid.NewGuid().ToString("N")); // ü: bytes != chars
        Directory.CreateDirectory(dir);
        using (Config c = Config.FromFile(ConfigPath))
        {
            RefusesNul(() => Config.FromFile(ConfigPath + "\0.bak"), "path", ConfigPath, "Config.FromFile");
            string dump = c.Dump();
            RefusesNul(() => Config.FromString(dump + "\0[x]"), "toml", dump, "Config.FromString toml");
            RefusesNul(() => Config.FromString(dump, dir + "\0x"), "baseDir", dir, "Config.FromString baseDir");
            using (Config d = Config.FromString(dump, dir)) T.Eq(4L, d.GetInt("train.batch_size"), "FromString");
            RefusesNul(() => c.Set("optim.lr\0x", "1e-3"), "key", "optim.lr", "Set key");
            RefusesNul(() => c.Set("optim.lr", "1e-3\0x"), "tomlValue", "1e-3", "Set value");
            RefusesNul(() => c.SetString("data.sampler\0x", "random"), "key", "data.sampler", "SetString key");
            T.Eq(0.003, c.GetDouble("optim.lr"), "refused Sets left the config");
            c.Set("optim.lr", "1e-3");
            T.Eq(1e-3, c.GetDouble("optim.lr"), "Set");
            RefusesNul(() => c.GetInt("train.batch_size\0"), "key", "train.batch_size", "GetInt");
            RefusesNul(() => c.GetDouble("optim.lr\0"), "key", "optim.lr", "GetDouble");
            RefusesNul(() => c.GetBool("train.batch_size\0"), "key", "train.batch_size", "GetBool");
            RefusesNul(() => c.GetString("data.sampler\0"), "key", "data.sampler", "GetString");
            T.Eq("random", c.GetString("data.sampler"), "GetString");

            using (Session s = new Session(c))
            {
                s.Step();
                string ckpt = Path.Combine(dir, "ckpt");
                RefusesNul(() => s.Save(ckpt + "\0x"), "dir", ckpt, "Save");
                T.True(!Directory.Exists(ckpt), "a refused Save wrote nothing");
                s.Save(ckpt);
                RefusesNul(() => s.Load(ckpt + "\0x"), "path", ckpt, "Load");
                s.Load(ckpt);
                string hf = Path.Combine(dir, "hf");
                RefusesNul(() => s.Export(hf + "\0x"), "outDir", hf, "Export");
                RefusesNul(() => s.ExportAdapter(hf + "\0x"), "outDir", hf, "ExportAdapter");
                T.True(!Directory.Exists(hf), "a refused export wrote nothing");
                RefusesNul(() => Config.FromCheckpoint(ckpt + "\0x"), "path", ckpt, "Config.FromCheckpoint");
                using (Config k = Config.FromCheckpoint(ckpt)) T.Eq(32L, k.GetInt("train.seq_len"), "FromCheckpoint");
                RefusesNul(() => Library.CheckpointLatest(dir + "\0x"), "outDir", dir, "CheckpointLatest");
                RefusesNul(() => Library.CheckpointExport(ckpt + "\0x", hf, DType.F32), "checkpoint", ckpt, "CheckpointExport");
                RefusesNul(() => Library.CheckpointExport(ckpt, hf + "\0x", DType.F32), "outDir", hf, "CheckpointExport outDir");
                RefusesNul(() => Library.CheckpointExportAdapter(ckpt + "\0x", hf, DType.F32), "checkpoint", ckpt,
                           "CheckpointExportAdapter");
                RefusesNul(() => Library.CheckpointExportAdapter(ckpt, hf + "\0x", DType.F32), "outDir", hf,
                           "CheckpointExportAdapter outDir");
                T.True(!Directory.Exists(hf), "a refused checkpoint export wrote nothing");
                Library.CheckpointExport(ckpt, hf, DType.F32);
                T.True(File.Exists(Path.Combine(hf, "config.json")), "CheckpointExport");
            }
        }

        string tokPath = WriteTinyTokenizer(dir);
        RefusesNul(() => Tokenizer.Load(tokPath + "\0x"), "path", tokPath, "Tokenizer.Load");
        using (Tokenizer tok = Tokenizer.Load(tokPath))
        {
            RefusesNul(() => tok.TokenId("hell\0o"), "token", "hell", "TokenId");
            T.Eq((int?)258, tok.TokenId("hell"), "TokenId");
            // Encode's text goes with its length: a NUL in it is an ordinary byte.
            T.Eq("[104, 0, 104]", Ids(tok.Encode("h\0h")), "Encode keeps a NUL");
        }

        File.WriteAllText(Path.Combine(dir, "tokenizer_config.json"), "{\"eos_token\": \"<|eot|>\"}");
        string text = Path.Combine(dir, "a.txt");
        File.WriteAllText(text, "hello\nhello hello\nworld\n");
        string shards = Path.Combine(dir, "shards");
        long tr, va;
        RefusesNul(() => Library.PrepareBytes(text + "\0x", shards, 0.1, out tr, out va), "textPath", text, "PrepareBytes");
        RefusesNul(() => Library.PrepareBytes(text, shards + "\0x", 0.1, out tr, out va), "outDir", shards, "PrepareBytes outDir");
        var o = new PrepareOptions(tokPath);
        RefusesNul(() => Library.PrepareText(new[] { text, text + "\0x" }, shards, o), "inputs[1]", text, "PrepareText input");
        RefusesNul(() => Library.PrepareText(new[] { text }, shards + "\0x", o), "outDir", shards, "PrepareText outDir");
        RefusesNul(() => Library.PrepareText(new[] { text }, shards, new PrepareOptions(tokPath + "\0x")),
                   "options.Tokenizer", tokPath, "PrepareText tokenizer");
        RefusesNul(() => Library.PrepareText(new[] { text }, shards, new PrepareOptions(tokPath) { JsonlField = "text\0x" }),
                   "options.JsonlField", "text", "PrepareText JsonlField");
        T.True(!Directory.Exists(shards), "refused preparations wrote nothing");
        T.Eq(1L, Library.PrepareText(new[] { text }, shards, o).Documents, "PrepareText");
    }

    static void DisposeSemantics()
    {
        Session s = Open();
        s.Dispose();
        s.Dispose(); // twice is fine
        T.Throws<ObjectDisposedException>(() => s.Step(), "use after dispose");
        T.Throws<ObjectDisposedException>(() => s.ReadParams(), "params after dispose");
        T.Throws<ObjectDisposedException>(() => s.MetadataKeys(), "metadata after dispose");
        Config c = new Config();
        c.Dispose();
        T.Throws<ObjectDisposedException>(() => c.GetInt("train.steps"), "config use after dispose");
        T.Throws<ArgumentNullException>(() => Config.FromFile(null), "null path");
        // Handles dropped without Dispose are released by the finalizer.
        for (int i = 0; i < 3; ++i) Open();
        GC.Collect(); GC.WaitForPendingFinalizers();
    }

    static void CallOverhead()
    {
        const int N = 200000;
        using (Config c = Config.FromFile(ConfigPath))
        using (Session s = new Session(c))
        {
            for (int i = 0; i < 1000; ++i) { Library.AbiVersion.GetHashCode(); c.GetInt("train.steps"); s.Metrics(); }
            var sw = Stopwatch.StartNew();
            uint acc = 0;
            for (int i = 0; i < N; ++i) acc += Library.AbiVersion;
            double raw = sw.Elapsed.TotalMilliseconds * 1e6 / N;
            sw.Restart();
            for (int i = 0; i < N; ++i) s.Metrics();
            double metrics = sw.Elapsed.TotalMilliseconds * 1e6 / N;
            sw.Restart();
            for (int i = 0; i < N; ++i) c.GetInt("train.steps");
            double getInt = sw.Elapsed.TotalMilliseconds * 1e6 / N;
            Console.WriteLine("  overhead: AbiVersion {0:F0} ns/call, Session.Metrics {1:F0} ns/call, Config.GetInt {2:F0} ns/call",
                              raw, metrics, getInt);
            // A measurement, reported and never asserted (timings depend on the machine).
            GC.KeepAlive(acc);
        }
    }

    static int Main()
    {
        if (ConfigPath == null || ExpectedPath == null)
        {
            Console.Error.WriteLine("TRAINRT_TEST_CONFIG / TRAINRT_TEST_EXPECTED not set (run through test.sh)");
            return 2;
        }
        Directory.CreateDirectory(Tmp);
        var tests = new List<KeyValuePair<string, Action>>
        {
            new KeyValuePair<string, Action>("StructLayouts", StructLayouts),
            new KeyValuePair<string, Action>("VersionAndFeatures", VersionAndFeatures),
            new KeyValuePair<string, Action>("ConfigRoundTrip", ConfigRoundTrip),
            new KeyValuePair<string, Action>("ConfigErrors", ConfigErrors),
            new KeyValuePair<string, Action>("LossesMatchCReference", LossesMatchCReference),
            new KeyValuePair<string, Action>("LogCallbacks", LogCallbacks),
            new KeyValuePair<string, Action>("TrainProgressAndStop", TrainProgressAndStop),
            new KeyValuePair<string, Action>("RequestStopFromAnotherThread", RequestStopFromAnotherThread),
            new KeyValuePair<string, Action>("CheckpointRoundTrip", CheckpointRoundTrip),
            new KeyValuePair<string, Action>("ForwardSampleStepTokens", ForwardSampleStepTokens),
            new KeyValuePair<string, Action>("ModelInfoAndPrepare", ModelInfoAndPrepare),
            new KeyValuePair<string, Action>("TokenizerEncodeDecode", TokenizerEncodeDecode),
            new KeyValuePair<string, Action>("TokenizerErrors", TokenizerErrors),
            new KeyValuePair<string, Action>("TokenizerManyThreadsAtOnce", TokenizerManyThreadsAtOnce),
            new KeyValuePair<string, Action>("PrepareTextShards", PrepareTextShards),
            new KeyValuePair<string, Action>("PrepareTextProgressCanStop", PrepareTextProgressCanStop),
            new KeyValuePair<string, Action>("ChatTemplateRenderAndStopIds", ChatTemplateRenderAndStopIds),
            new KeyValuePair<string, Action>("GenerateStopsAtAStopId", GenerateStopsAtAStopId),
            new KeyValuePair<string, Action>("PrepareTextChat", PrepareTextChat),
            new KeyValuePair<string, Action>("ParamsList", ParamsList),
            new KeyValuePair<string, Action>("ParamsReadWrite", ParamsReadWrite),
            new KeyValuePair<string, Action>("ParamsRefusedWrites", ParamsRefusedWrites),
            new KeyValuePair<string, Action>("MetadataRoundTrip", MetadataRoundTrip),
            new KeyValuePair<string, Action>("NulInStringArguments", NulInStringArguments),
            new KeyValuePair<string, Action>("DisposeSemantics", DisposeSemantics),
            new KeyValuePair<string, Action>("CallOverhead", CallOverhead),
        };
        int failed = 0;
        foreach (var t in tests)
        {
            var sw = Stopwatch.StartNew();
            try
            {
                t.Value();
                Console.WriteLine("PASS {0} ({1:F0} ms)", t.Key, sw.Elapsed.TotalMilliseconds);
            }
            catch (Exception e)
            {
                ++failed;
                Console.WriteLine("FAIL {0}: {1}", t.Key, e is AssertFailed ? e.Message : e.ToString());
            }
        }
        Console.WriteLine("{0} passed, {1} failed", tests.Count - failed, failed);
        return failed == 0 ? 0 : 1;
    }
}
