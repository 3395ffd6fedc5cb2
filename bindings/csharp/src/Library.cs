using System;
using System.Collections.Generic;
using System.Runtime.ExceptionServices;
using System.Runtime.InteropServices;

namespace Trainrt
{
    public enum LogLevel { Debug = 0, Info = 1, Warn = 2, Error = 3 }
    public enum DType { F32 = 0, BF16 = 1 }

    [Flags]
    public enum Features : ulong
    {
        None = 0,
        Cpu = 1UL << 0,
        OpenMP = 1UL << 1,
        OpenBlas = 1UL << 2,
        CudaModule = 1UL << 3,
        CuDnn = 1UL << 4,
        Nccl = 1UL << 5,
        Mpi = 1UL << 6,
    }

    /// <summary>One log line (single line, no newline). Exceptions thrown here are caught
    /// before they reach C; see Library.LastCallbackException.</summary>
    public delegate void LogCallback(LogLevel level, string message);

    /// <summary>Called by Session.Train at each logged step and eval. Return true to
    /// continue, false to stop (Train then returns Status.Stopped).</summary>
    public delegate bool ProgressCallback(Progress progress);

    /// <summary>Wraps a LogCallback as the C function pointer; never lets an exception out.</summary>
    internal sealed class LogSink
    {
        readonly LogCallback callback;
        internal readonly NativeLogFn Fn;
        internal LogSink(LogCallback cb) { callback = cb; Fn = Invoke; }
        void Invoke(int level, IntPtr message, IntPtr payload)
        {
            try { callback((LogLevel)level, Utf8.Decode(message)); }
            catch (Exception e) { Library.LastCallbackException = e; }
        }
        internal static NativeLogFn FnOf(LogSink s) { return s == null ? null : s.Fn; }
    }

    /// <summary>Process-wide calls: versions, features, default log, data and checkpoints.</summary>
    public static class Library
    {
        /// <summary>The ABI this binding was written against (TRAINRT_ABI_VERSION).</summary>
        public const uint BindingAbiVersion = 0;

        static readonly object sinkLock = new object();
        static readonly List<LogSink> defaultSinks = new List<LogSink>(); // alive for the process

        /// <summary>The last exception a log callback threw (and the binding swallowed).</summary>
        public static Exception LastCallbackException;

        public static string Version { get { Loading.Require(); return Utf8.Decode(Native.trainrt_version_string()); } }
        public static uint AbiVersion { get { Loading.Require(); return Native.trainrt_abi_version(); } }
        public static Features BuildFeatures { get { Loading.Require(); return (Features)Native.trainrt_build_features(); } }
        public static string StatusString(Status status) { Loading.Require(); return Utf8.Decode(Native.trainrt_status_string((int)status)); }

        /// <summary>Process default log sink; null restores the built-in stderr sink.</summary>
        public static void SetDefaultLog(LogCallback callback, LogLevel minLevel)
        {
            Loading.Require();
            LogSink sink = callback == null ? null : new LogSink(callback);
            lock (sinkLock)
            {
                // Earlier sinks stay referenced: another thread may still be inside one.
                if (sink != null) defaultSinks.Add(sink);
                Errors.Check(Native.trainrt_log_set_default(LogSink.FnOf(sink), IntPtr.Zero, (int)minLevel),
                             "trainrt_log_set_default");
            }
        }

        /// <summary>Byte-level tokenization of a text file into out_dir/train.bin and val.bin.</summary>
        public static void PrepareBytes(string textPath, string outDir, double valFraction,
                                        out long trainTokens, out long valTokens)
        {
            Loading.Require();
            Errors.Check(Native.trainrt_prepare_bytes(out trainTokens, out valTokens,
                Utf8.Arg(textPath, "textPath"), Utf8.Arg(outDir, "outDir"), valFraction),
                "trainrt_prepare_bytes");
        }

        /// <summary>Tokenizes inputs (read in order) with a Hugging Face tokenizer into llm.c
        /// shards, outDir/train.bin and outDir/val.bin, each written complete or not at all.
        /// When options.Progress returns false the run stops: TrainrtException with
        /// Status.Cancelled, no shard written. An exception thrown by it stops the run too and
        /// is rethrown here.</summary>
        public static PrepareResult PrepareText(IList<string> inputs, string outDir, PrepareOptions options)
        {
            Loading.Require();
            if (inputs == null) throw new ArgumentNullException("inputs");
            if (options == null) throw new ArgumentNullException("options");
            byte[] dir = Utf8.Arg(outDir, "outDir");
            byte[] tokenizer = Utf8.Arg(options.Tokenizer, "options.Tokenizer");
            var owned = new List<IntPtr>();
            Exception thrown = null;
            NativePrepareProgressFn fn = null;
            PrepareProgressCallback callback = options.Progress;
            if (callback != null)
            {
                fn = delegate(long done, long total, IntPtr payload)
                {
                    if (thrown != null) return 1;
                    try
                    {
                        return callback(done, total) ? 0 : 1;
                    }
                    catch (Exception e)
                    {
                        thrown = e;
                        return 1; // never let it cross into C; stop instead
                    }
                };
            }
            try
            {
                var ptrs = new IntPtr[inputs.Count + 1]; // +1: never an empty array
                for (int i = 0; i < inputs.Count; ++i)
                    ptrs[i] = CString(Utf8.Arg(inputs[i], "inputs[" + i + "]"), owned);
                PrepareOptionsNative o = PrepareOptionsNative.Create();
                o.Tokenizer = CString(tokenizer, owned);
                o.JsonlField = options.JsonlField == null ? IntPtr.Zero : CString(Utf8.Encode(options.JsonlField, "options.JsonlField"), owned);
                o.ValFraction = options.ValFraction;
                o.Threads = options.Threads;
                o.ShardTokens = options.ShardTokens;
                o.Chat = options.Chat ? 1 : 0;
                o.LossMask = (int)options.LossMask;
                o.ChatTemplate = options.ChatTemplate == null ? IntPtr.Zero : CString(Utf8.Encode(options.ChatTemplate, "options.ChatTemplate"), owned);
                o.TemplateVars = options.TemplateVars == null ? IntPtr.Zero : CString(Utf8.Encode(options.TemplateVars, "options.TemplateVars"), owned);
                o.Progress = fn == null ? IntPtr.Zero : Marshal.GetFunctionPointerForDelegate(fn);
                PrepareResult r = PrepareResult.Create();
                int status = Native.trainrt_prepare_text(ref r, ptrs, (UIntPtr)inputs.Count, dir, ref o);
                GC.KeepAlive(fn);
                if (thrown != null) ExceptionDispatchInfo.Capture(thrown).Throw();
                Errors.Check(status, "trainrt_prepare_text");
                return r;
            }
            finally
            {
                foreach (IntPtr p in owned) Marshal.FreeHGlobal(p);
            }
        }

        /// <summary>A NUL-terminated copy of bytes in unmanaged memory, freed by the caller.</summary>
        static IntPtr CString(byte[] bytes, List<IntPtr> owned)
        {
            IntPtr p = Marshal.AllocHGlobal(bytes.Length);
            owned.Add(p);
            Marshal.Copy(bytes, 0, p, bytes.Length);
            return p;
        }

        /// <summary>The checkpoint directory out_dir/latest names; "" when none yet.</summary>
        public static string CheckpointLatest(string outDir)
        {
            Loading.Require();
            byte[] dir = Utf8.Arg(outDir, "outDir");
            return Buffers.Read(delegate(byte[] b, UIntPtr c, out UIntPtr n) {
                return Native.trainrt_checkpoint_latest(b, c, out n, dir);
            }, "trainrt_checkpoint_latest");
        }

        /// <summary>A LoRA checkpoint's adapters as a PEFT folder, without a session.</summary>
        public static void CheckpointExportAdapter(string checkpoint, string outDir, DType dtype)
        {
            Loading.Require();
            Errors.Check(Native.trainrt_checkpoint_export_adapter(Utf8.Arg(checkpoint, "checkpoint"),
                Utf8.Arg(outDir, "outDir"), (int)dtype), "trainrt_checkpoint_export_adapter");
        }

        /// <summary>Hugging Face GPT-2 export of a checkpoint, without a session.</summary>
        public static void CheckpointExport(string checkpoint, string outDir, DType dtype)
        {
            Loading.Require();
            Errors.Check(Native.trainrt_checkpoint_export(Utf8.Arg(checkpoint, "checkpoint"),
                Utf8.Arg(outDir, "outDir"), (int)dtype), "trainrt_checkpoint_export");
        }
    }
}
