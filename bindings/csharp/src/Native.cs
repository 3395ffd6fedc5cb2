// Raw P/Invoke declarations of include/trainrt/trainrt.h. Internal: use Config / Session.
// Strings go in as NUL-terminated UTF-8 byte[] and come out as IntPtr / byte buffers, so no
// reliance on Mono's default string marshalling (which is not UTF-8 everywhere).
using System;
using System.Runtime.InteropServices;

namespace Trainrt
{
    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    internal delegate void NativeLogFn(int level, IntPtr message, IntPtr payload);

    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    internal delegate int NativeProgressFn(IntPtr progress, IntPtr payload);

    // trainrt_prepare_progress_fn: returns 0 to go on, non-zero to stop.
    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    internal delegate int NativePrepareProgressFn(long done, long total, IntPtr payload);

    /// <summary>trainrt_prepare_options (88 bytes on 64-bit, version 3): C strings and the progress
    /// function pointer as IntPtr, filled by Library.PrepareText.</summary>
    [StructLayout(LayoutKind.Sequential)]
    internal struct PrepareOptionsNative
    {
        public uint StructSize;
        public uint Version;
        public IntPtr Tokenizer;     // const char*, required
        public IntPtr JsonlField;    // const char*, NULL = text inputs
        public double ValFraction;
        public int Threads;
        public int Reserved;
        public IntPtr Progress;      // trainrt_prepare_progress_fn, NULL = none
        public IntPtr ProgressPayload;
        public long ShardTokens;     // version 2: 0 = one file per split
        public int Chat;             // version 3: 1 = chat data (loss masks)
        public int LossMask;         // TRAINRT_LOSS_MASK_*
        public IntPtr ChatTemplate;  // const char*, NULL = "default"
        public IntPtr TemplateVars;  // const char*, a JSON object, NULL = none

        public const uint CurrentVersion = 3;
        public static PrepareOptionsNative Create()
        {
            PrepareOptionsNative o = new PrepareOptionsNative();
            o.StructSize = (uint)Marshal.SizeOf(typeof(PrepareOptionsNative));
            o.Version = CurrentVersion;
            return o;
        }
    }

    /// <summary>trainrt_param_info (72 bytes, version 1): one model tensor. Session.Params
    /// turns it into a ParamInfo.</summary>
    [StructLayout(LayoutKind.Sequential, Size = 72)]
    internal struct ParamInfoNative
    {
        public uint StructSize;
        public uint Version;
        public int Role;         // TRAINRT_PARAM_ROLE_*
        public int Ndim;         // 1 or 2
        public long Shape0;      // int64_t shape[4]; dims past ndim are 0
        public long Shape1;
        public long Shape2;
        public long Shape3;
        public long Numel;
        public long Offset;      // first element in the flat buffer
        public int Layer;        // -1: embeddings, final norm, head
        public int Trainable;    // 1: the optimizer updates it

        public const uint CurrentVersion = 1;
        public static ParamInfoNative Create()
        {
            ParamInfoNative p = new ParamInfoNative();
            p.StructSize = (uint)Marshal.SizeOf(typeof(ParamInfoNative));
            p.Version = CurrentVersion;
            return p;
        }
    }

    internal static class Native
    {
        // "trainrt" resolves to libtrainrt.so on LD_LIBRARY_PATH; Trainrt.dll.config maps it
        // to libtrainrt.so.0 (the runtime package's name) when the dev symlink is absent.
        internal const string Lib = "trainrt";
        const CallingConvention CC = CallingConvention.Cdecl;

        [DllImport(Lib, CallingConvention = CC)] internal static extern IntPtr trainrt_version_string();
        [DllImport(Lib, CallingConvention = CC)] internal static extern uint trainrt_abi_version();
        [DllImport(Lib, CallingConvention = CC)] internal static extern ulong trainrt_build_features();
        [DllImport(Lib, CallingConvention = CC)] internal static extern IntPtr trainrt_status_string(int status);
        [DllImport(Lib, CallingConvention = CC)] internal static extern IntPtr trainrt_last_error_message();
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_log_set_default(NativeLogFn fn, IntPtr payload, int minLevel);

        // config
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_config_create(out IntPtr config);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_config_from_file(out IntPtr config, byte[] path);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_config_from_string(out IntPtr config, byte[] toml, byte[] baseDir);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_config_from_checkpoint(out IntPtr config, byte[] path);
        [DllImport(Lib, CallingConvention = CC)] internal static extern void trainrt_config_destroy(IntPtr config);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_config_set(ConfigHandle config, byte[] key, byte[] value);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_config_get_int(out long value, ConfigHandle config, byte[] key);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_config_get_double(out double value, ConfigHandle config, byte[] key);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_config_get_bool(out int value, ConfigHandle config, byte[] key);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_config_get_string(byte[] buf, UIntPtr cap, out UIntPtr needed, ConfigHandle config, byte[] key);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_config_dump(byte[] buf, UIntPtr cap, out UIntPtr needed, ConfigHandle config);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_config_set_log(ConfigHandle config, NativeLogFn fn, IntPtr payload, int minLevel);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_config_model_info(ref ModelInfo info, ConfigHandle config);

        // session
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_create(out IntPtr session, ConfigHandle config);
        [DllImport(Lib, CallingConvention = CC)] internal static extern void trainrt_session_destroy(IntPtr session);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_set_log(SessionHandle session, NativeLogFn fn, IntPtr payload, int minLevel);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_step(ref StepResult result, SessionHandle session);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_step_tokens(ref StepResult result, SessionHandle session, int[] tokens, UIntPtr nTokens);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_step_masked(ref StepResult result, SessionHandle session, int[] tokens, UIntPtr nTokens, byte[] lossMask, int[] positions, UIntPtr nMask);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_sync(ref StepResult result, SessionHandle session);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_eval(out double loss, SessionHandle session);
        [DllImport(Lib, CallingConvention = CC)] internal static extern void trainrt_eval_result_init(ref EvalResult r);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_eval_whole(ref EvalResult result, SessionHandle session);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_eval_tokens(ref EvalResult result, SessionHandle session, int[] tokens, UIntPtr nTokens);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_eval_text(ref EvalResult result, SessionHandle session, byte[] text, UIntPtr len, byte[] tokenizer);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_forward(out double loss, float[] logits, UIntPtr logitsCap, SessionHandle session, int[] tokens, long rows, long seqLen);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_train(SessionHandle session, long nSteps, NativeProgressFn callback, IntPtr payload);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_request_stop(SessionHandle session);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_metrics(ref Metrics metrics, SessionHandle session);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_config_dump(byte[] buf, UIntPtr cap, out UIntPtr needed, SessionHandle session);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_save(byte[] buf, UIntPtr cap, out UIntPtr needed, SessionHandle session, byte[] dir);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_load(SessionHandle session, byte[] path);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_export(SessionHandle session, byte[] outDir, int dtype);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_sample(int[] output, UIntPtr outCap, SessionHandle session, int[] prompt, UIntPtr nPrompt, UIntPtr nNew, ref SampleOptions options);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_generate(out UIntPtr outN, int[] output, UIntPtr outCap, SessionHandle session, int[] prompt, UIntPtr nPrompt, UIntPtr maxNew, ref SampleOptions options);

        // parameters and metadata
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_param_count(out long tensors, out long numel, SessionHandle session);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_param_info(ref ParamInfoNative info, byte[] nameBuf, UIntPtr cap, out UIntPtr needed, SessionHandle session, long index);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_read_params([Out] float[] output, UIntPtr count, SessionHandle session, byte[] name);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_write_params(SessionHandle session, byte[] name, float[] values, UIntPtr count);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_set_metadata(SessionHandle session, byte[] key, byte[] value);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_get_metadata(byte[] buf, UIntPtr cap, out UIntPtr needed, out int found, SessionHandle session, byte[] key);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_metadata_count(out long count, SessionHandle session);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_metadata_key(byte[] buf, UIntPtr cap, out UIntPtr needed, SessionHandle session, long index);

        // checkpoints, data
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_checkpoint_latest(byte[] buf, UIntPtr cap, out UIntPtr needed, byte[] outDir);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_checkpoint_export(byte[] path, byte[] outDir, int dtype);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_session_export_adapter(SessionHandle session, byte[] outDir, int dtype);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_checkpoint_export_adapter(byte[] path, byte[] outDir, int dtype);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_prepare_bytes(out long trainTokens, out long valTokens, byte[] textPath, byte[] outDir, double valFraction);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_prepare_text(ref PrepareResult result, IntPtr[] inputs, UIntPtr nInputs, byte[] outDir, ref PrepareOptionsNative options);

        // tokenizers
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_tokenizer_load(out IntPtr tokenizer, byte[] path);
        [DllImport(Lib, CallingConvention = CC)] internal static extern void trainrt_tokenizer_destroy(IntPtr tokenizer);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_tokenizer_encode(int[] ids, UIntPtr cap, out UIntPtr needed, TokenizerHandle tokenizer, byte[] text, UIntPtr len);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_tokenizer_decode(byte[] buf, UIntPtr cap, out UIntPtr needed, TokenizerHandle tokenizer, int[] ids, UIntPtr nIds);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_tokenizer_vocab_size(out int vocabSize, TokenizerHandle tokenizer);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_tokenizer_token_id(out int id, TokenizerHandle tokenizer, byte[] token);

        // chat templates
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_chat_template_load(out IntPtr tmpl, byte[] folder, byte[] name);
        [DllImport(Lib, CallingConvention = CC)] internal static extern void trainrt_chat_template_destroy(IntPtr tmpl);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_chat_template_render(byte[] buf, UIntPtr cap, out UIntPtr needed, ChatTemplateHandle tmpl, byte[] conversationJson, int addGenerationPrompt, byte[] varsJson);
        [DllImport(Lib, CallingConvention = CC)] internal static extern int trainrt_chat_template_stop_ids(int[] ids, UIntPtr cap, out UIntPtr needed, ChatTemplateHandle tmpl, TokenizerHandle tokenizer);

        // struct initialisers (used by the tests to check that C's sizeof equals ours)
        [DllImport(Lib, CallingConvention = CC)] internal static extern void trainrt_step_result_init(ref StepResult r);
        [DllImport(Lib, CallingConvention = CC)] internal static extern void trainrt_metrics_init(ref Metrics m);
        [DllImport(Lib, CallingConvention = CC)] internal static extern void trainrt_sample_options_init(ref SampleOptions o);
        [DllImport(Lib, CallingConvention = CC)] internal static extern void trainrt_prepare_result_init(ref PrepareResult r);
        [DllImport(Lib, CallingConvention = CC)] internal static extern void trainrt_param_info_init(ref ParamInfoNative info);
    }

    /// <summary>UTF-8 marshalling by hand.</summary>
    internal static class Utf8
    {
        /// <summary>NUL-terminated UTF-8 bytes of s; null stays null (a C NULL). A NUL
        /// character inside is an ArgumentException naming the parameter: C would see only the
        /// part before it (a path "x\0y" naming the file "x"). Every string the binding hands to
        /// the library as a C string comes through here; byte arrays passed with their length
        /// (Tokenizer.Encode's text) do not, and may hold NUL.</summary>
        internal static byte[] Encode(string s, string name)
        {
            if (s == null) return null;
            int n = System.Text.Encoding.UTF8.GetByteCount(s);
            byte[] b = new byte[n + 1];
            System.Text.Encoding.UTF8.GetBytes(s, 0, s.Length, b, 0);
            // Only U+0000 encodes to a zero byte in UTF-8, so this is its byte offset.
            int at = Array.IndexOf(b, (byte)0, 0, n);
            if (at >= 0)
                throw new ArgumentException(name + " holds a NUL character at byte " + at +
                    " (C strings end there, so the library would see only what comes before it)", name);
            return b;
        }

        /// <summary>Encode, refusing null (for arguments the C API needs).</summary>
        internal static byte[] Arg(string s, string name)
        {
            if (s == null) throw new ArgumentNullException(name);
            return Encode(s, name);
        }

        /// <summary>A C string (manual strlen) as a .NET string; NULL gives "".</summary>
        internal static string Decode(IntPtr p)
        {
            if (p == IntPtr.Zero) return "";
            int n = 0;
            while (Marshal.ReadByte(p, n) != 0) ++n;
            byte[] b = new byte[n];
            Marshal.Copy(p, b, 0, n);
            return System.Text.Encoding.UTF8.GetString(b);
        }

        internal static string Decode(byte[] buf, int length)
        {
            return System.Text.Encoding.UTF8.GetString(buf, 0, length);
        }
    }

    /// <summary>A native call filling (buf, cap, &amp;needed).</summary>
    internal delegate int BufferCall(byte[] buf, UIntPtr cap, out UIntPtr needed);

    internal static class Buffers
    {
        /// <summary>Runs call with a 256-byte buffer, again with an exact one if that was short.</summary>
        internal static string Read(BufferCall call, string what)
        {
            byte[] b = ReadBytes(call, 256, what);
            return Utf8.Decode(b, b.Length);
        }

        /// <summary>Read's loop for bytes that may hold NUL (the length is *needed): a first
        /// buffer of firstCap bytes, an exact one (needed + 1, for the NUL) if that was short.</summary>
        internal static byte[] ReadBytes(BufferCall call, int firstCap, string what)
        {
            byte[] buf = new byte[Math.Max(firstCap, 1)];
            UIntPtr needed;
            Errors.Check(call(buf, (UIntPtr)buf.Length, out needed), what);
            ulong n = needed.ToUInt64();
            if (n >= (ulong)buf.Length)
            {
                buf = new byte[checked((int)n + 1)];
                Errors.Check(call(buf, (UIntPtr)buf.Length, out needed), what);
                n = Math.Min(needed.ToUInt64(), (ulong)buf.Length - 1);
            }
            if (n < (ulong)buf.Length) Array.Resize(ref buf, (int)n);
            return buf;
        }
    }
}
