using System;

namespace Trainrt
{
    /// <summary>A run configuration (TOML; keys are dotted paths such as "optim.lr"),
    /// validated on every change. Dispose it when done; a Session keeps its own copy.</summary>
    public sealed class Config : IDisposable
    {
        readonly ConfigHandle handle;
        LogSink logSink; // the sink sessions created from this config inherit

        Config(IntPtr p, string what)
        {
            if (p == IntPtr.Zero) throw new TrainrtException(Status.Internal, "NULL handle", what);
            handle = new ConfigHandle(p);
        }

        /// <summary>All defaults.</summary>
        public Config() : this(CreateDefault(), "trainrt_config_create") { }

        static IntPtr CreateDefault()
        {
            Loading.Require();
            IntPtr p;
            Errors.Check(Native.trainrt_config_create(out p), "trainrt_config_create");
            return p;
        }

        /// <summary>Relative paths in the file resolve against the file's folder.</summary>
        public static Config FromFile(string path)
        {
            Loading.Require();
            IntPtr p;
            Errors.Check(Native.trainrt_config_from_file(out p, Utf8.Arg(path, "path")), "trainrt_config_from_file");
            return new Config(p, "trainrt_config_from_file");
        }

        /// <summary>baseDir (null = current directory) anchors relative paths.</summary>
        public static Config FromString(string toml, string baseDir = null)
        {
            Loading.Require();
            IntPtr p;
            Errors.Check(Native.trainrt_config_from_string(out p, Utf8.Arg(toml, "toml"), Utf8.Encode(baseDir, "baseDir")),
                         "trainrt_config_from_string");
            return new Config(p, "trainrt_config_from_string");
        }

        /// <summary>The run config a checkpoint was trained with.</summary>
        public static Config FromCheckpoint(string path)
        {
            Loading.Require();
            IntPtr p;
            Errors.Check(Native.trainrt_config_from_checkpoint(out p, Utf8.Arg(path, "path")),
                         "trainrt_config_from_checkpoint");
            return new Config(p, "trainrt_config_from_checkpoint");
        }

        public ConfigHandle Handle { get { return Live(); } }

        ConfigHandle Live()
        {
            if (handle.IsClosed) throw new ObjectDisposedException("Trainrt.Config");
            return handle;
        }

        internal LogSink LogSink { get { return logSink; } }

        /// <summary>Set one key from a TOML value: Set("optim.lr", "1e-3"),
        /// Set("data.train", "\"shards/train.bin\""). On error the config is unchanged.</summary>
        public void Set(string key, string tomlValue)
        {
            Errors.Check(Native.trainrt_config_set(Live(), Utf8.Arg(key, "key"), Utf8.Arg(tomlValue, "tomlValue")),
                         "trainrt_config_set " + key);
        }

        /// <summary>Set a string key, quoting and escaping it as a TOML basic string.</summary>
        public void SetString(string key, string value)
        {
            if (value == null) throw new ArgumentNullException("value");
            var sb = new System.Text.StringBuilder("\"");
            foreach (char c in value)
            {
                if (c == '"' || c == '\\') sb.Append('\\').Append(c);
                else if (c < 0x20 || c == 0x7f) sb.AppendFormat("\\u{0:X4}", (int)c);
                else sb.Append(c);
            }
            Set(key, sb.Append('"').ToString());
        }

        public long GetInt(string key)
        {
            long v;
            Errors.Check(Native.trainrt_config_get_int(out v, Live(), Utf8.Arg(key, "key")), "trainrt_config_get_int " + key);
            return v;
        }

        public double GetDouble(string key)
        {
            double v;
            Errors.Check(Native.trainrt_config_get_double(out v, Live(), Utf8.Arg(key, "key")), "trainrt_config_get_double " + key);
            return v;
        }

        public bool GetBool(string key)
        {
            int v;
            Errors.Check(Native.trainrt_config_get_bool(out v, Live(), Utf8.Arg(key, "key")), "trainrt_config_get_bool " + key);
            return v != 0;
        }

        /// <summary>A string key's value; any other key as its TOML text.</summary>
        public string GetString(string key)
        {
            ConfigHandle h = Live();
            byte[] k = Utf8.Arg(key, "key");
            return Buffers.Read(delegate(byte[] b, UIntPtr c, out UIntPtr n) {
                return Native.trainrt_config_get_string(b, c, out n, h, k);
            }, "trainrt_config_get_string " + key);
        }

        /// <summary>The whole resolved config as TOML (defaults included).</summary>
        public string Dump()
        {
            ConfigHandle h = Live();
            return Buffers.Read(delegate(byte[] b, UIntPtr c, out UIntPtr n) {
                return Native.trainrt_config_dump(b, c, out n, h);
            }, "trainrt_config_dump");
        }

        /// <summary>Log sink for sessions created from this config (null: process default).
        /// The delegate is kept alive by this config and by every session created from it.</summary>
        public void SetLog(LogCallback callback, LogLevel minLevel = LogLevel.Info)
        {
            ConfigHandle h = Live();
            LogSink sink = callback == null ? null : new LogSink(callback);
            Errors.Check(Native.trainrt_config_set_log(h, LogSink.FnOf(sink), IntPtr.Zero, (int)minLevel),
                         "trainrt_config_set_log");
            if (sink != null) h.KeepAlive.Add(sink);
            logSink = sink;
        }

        /// <summary>Parameters and memory of this config's model, without allocating it.</summary>
        public ModelInfo ModelInfo()
        {
            ModelInfo info = Trainrt.ModelInfo.Create();
            Errors.Check(Native.trainrt_config_model_info(ref info, Live()), "trainrt_config_model_info");
            return info;
        }

        public void Dispose() { handle.Dispose(); }
    }
}
