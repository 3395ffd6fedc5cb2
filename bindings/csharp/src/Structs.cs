// Mirrors of the C output/option structs. Layout is Sequential with the C sizes; the tests
// check Marshal.SizeOf / OffsetOf against the numbers of the C compiler and against the
// struct_size the library's own *_init functions write.
using System;
using System.Runtime.InteropServices;

namespace Trainrt
{
    /// <summary>trainrt_step_result (64 bytes): figures of one completed optimizer step.</summary>
    [StructLayout(LayoutKind.Sequential, Size = 64)]
    public struct StepResult
    {
        public uint StructSize;
        public uint Version;
        public long Step;
        public double Loss;
        public double Lr;
        public double GradNorm;
        public long Tokens;
        public long TokensTotal;
        public double Ms;

        public const uint CurrentVersion = 1;
        public static StepResult Create()
        {
            StepResult r = new StepResult();
            r.StructSize = (uint)Marshal.SizeOf(typeof(StepResult));
            r.Version = CurrentVersion;
            return r;
        }
    }

    /// <summary>trainrt_eval_result (40 bytes): a whole evaluation, every target of a token
    /// stream scored exactly once.</summary>
    [StructLayout(LayoutKind.Sequential, Size = 40)]
    public struct EvalResult
    {
        public uint StructSize;
        public uint Version;
        public double Loss;        // mean loss over the scored targets (nats/token)
        public double Perplexity;  // exp(Loss)
        public long Tokens;        // targets scored: the stream's tokens - 1
        public long Windows;       // windows of train.seq_len targets (the last may be shorter)

        public const uint CurrentVersion = 1;
        public static EvalResult Create()
        {
            EvalResult r = new EvalResult();
            r.StructSize = (uint)Marshal.SizeOf(typeof(EvalResult));
            r.Version = CurrentVersion;
            return r;
        }
    }

    /// <summary>trainrt_metrics (128 bytes, version 4): running figures of a session.</summary>
    [StructLayout(LayoutKind.Sequential, Size = 128)]
    public struct Metrics
    {
        public uint StructSize;
        public uint Version;
        public long Step;
        public long TokensTotal;
        public double TokensPerS;
        public double StepMsP50;
        public double StepMsP95;
        public long BytesInUse;
        public double LastLoss;
        public double LastValLoss;
        public long BytesReserved;
        public long SkippedSteps;
        public double LossScale;
        // version 3
        /// <summary>Training FLOPs per token, 6N + 6*L*C*T.</summary>
        public double ModelFlopsPerToken;
        /// <summary>Dense peak FLOP/s of the device in the run's precision; 0 = unknown (CPU).</summary>
        public double PeakFlops;
        /// <summary>Model FLOPs utilisation, normally in [0, 1]; 0 when the peak is unknown.</summary>
        public double Mfu;
        // version 4
        /// <summary>Data parallel: this process's rank (0 alone).</summary>
        public int Rank;
        /// <summary>Data parallel: the ranks training together (1 alone).</summary>
        public int WorldSize;

        public const uint CurrentVersion = 4;
        public static Metrics Create()
        {
            Metrics m = new Metrics();
            m.StructSize = (uint)Marshal.SizeOf(typeof(Metrics));
            m.Version = CurrentVersion;
            return m;
        }
    }

    public enum ProgressKind { Step = 0, Eval = 1 }

    /// <summary>trainrt_progress (96 bytes): what Session.Train reports to its callback.</summary>
    [StructLayout(LayoutKind.Sequential, Size = 96)]
    public struct Progress
    {
        public uint StructSize;
        public uint Version;
        public ProgressKind Kind;
        public int Reserved;
        public long Step;
        public long StepsTotal;
        public double Loss;
        public double Lr;
        public double GradNorm;
        public long TokensTotal;
        public double Ms;
        public double TokensPerS;
        public double ElapsedS;
        public double EtaS;
    }

    /// <summary>trainrt_sample_options (48 bytes, version 2). StopIds / NStopIds are set by
    /// Session.Generate from its stopIds argument; leave them zero.</summary>
    [StructLayout(LayoutKind.Sequential, Size = 48)]
    public struct SampleOptions
    {
        public uint StructSize;
        public uint Version;
        public double Temperature; // > 0 scales the logits; 0 = greedy
        public int TopK;           // 0 = all
        public int Reserved;
        public ulong Seed;
        public IntPtr StopIds;     // version 2: const int32_t*, ids that end Session.Generate
        public UIntPtr NStopIds;

        public const uint CurrentVersion = 2;
        /// <summary>The library defaults: temperature 1, top_k 0, seed 1337.</summary>
        public static SampleOptions Create()
        {
            SampleOptions o = new SampleOptions();
            o.StructSize = (uint)Marshal.SizeOf(typeof(SampleOptions));
            o.Version = CurrentVersion;
            o.Temperature = 1.0;
            o.Seed = 1337;
            return o;
        }
    }

    /// <summary>trainrt_model_info (64 bytes, version 2): what a config's model costs.</summary>
    [StructLayout(LayoutKind.Sequential, Size = 64)]
    public struct ModelInfo
    {
        public uint StructSize;
        public uint Version;
        public long Parameters;
        public double FlopsPerToken;
        public long BytesParameters;
        public long BytesOptimizer;
        public long BytesActivations;
        public long BytesTotal;
        /// <summary>The parameters that train (all, or LoRA adapters and train.trainable's).</summary>
        public long TrainableParameters;

        public const uint CurrentVersion = 2;
        public static ModelInfo Create()
        {
            ModelInfo m = new ModelInfo();
            m.StructSize = (uint)Marshal.SizeOf(typeof(ModelInfo));
            m.Version = CurrentVersion;
            return m;
        }
    }

    /// <summary>trainrt_prepare_result (88 bytes, version 3): what Library.PrepareText
    /// wrote.</summary>
    [StructLayout(LayoutKind.Sequential, Size = 88)]
    public struct PrepareResult
    {
        public uint StructSize;
        public uint Version;
        public long Documents;
        public long TrainTokens;
        public long ValTokens;
        /// <summary>Input bytes tokenized.</summary>
        public long Bytes;
        /// <summary>2 or 4: the shards' id width (uint16 when every id fits, else uint32).</summary>
        public int TokenBytes;
        /// <summary>The tokenizer's: the smallest model.vocab_size for these shards.</summary>
        public int VocabSize;
        /// <summary>The end-of-text token that begins each document.</summary>
        public int EosId;
        public int Reserved;
        /// <summary>Shard files written per split (1 without PrepareOptions.ShardTokens).</summary>
        public int TrainShards;
        public int ValShards;
        /// <summary>Chat data (Documents then counts the conversations): examples written (a
        /// conversation in the per-turn form gives several).</summary>
        public long Examples;
        /// <summary>Chat data: the tokens of both splits whose loss counts.</summary>
        public long TargetTokens;
        /// <summary>Chat data: conversations written one example per assistant turn.</summary>
        public long PerTurn;

        public const uint CurrentVersion = 3;
        public static PrepareResult Create()
        {
            PrepareResult r = new PrepareResult();
            r.StructSize = (uint)Marshal.SizeOf(typeof(PrepareResult));
            r.Version = CurrentVersion;
            return r;
        }
    }
}
