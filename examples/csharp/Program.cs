// Trains from a TOML config through the C# binding and prints the loss of every step.
//   mono TrainrtExample.exe CONFIG.toml [STEPS]
// STEPS defaults to the config's train.steps. Build: see bindings/csharp/README.md.
using System;
using Trainrt;

static class Program
{
    static int Main(string[] args)
    {
        if (args.Length < 1)
        {
            Console.Error.WriteLine("usage: TrainrtExample CONFIG.toml [STEPS]");
            return 2;
        }
        try
        {
            using (Config config = Config.FromFile(args[0]))
            {
                config.SetLog((level, message) => Console.Error.WriteLine("[{0}] {1}", level, message),
                              LogLevel.Warn);
                long steps = args.Length > 1 ? long.Parse(args[1]) : config.GetInt("train.steps");
                using (Session session = new Session(config))
                {
                    // Ctrl-C: finish the current step, then stop.
                    Console.CancelKeyPress += (s, e) => { e.Cancel = true; session.RequestStop(); };
                    for (long i = 0; i < steps; ++i)
                    {
                        session.Step();
                        StepResult r = session.Sync();
                        Console.WriteLine("step {0}: loss {1:F4} lr {2:E2} grad norm {3:F3} ({4:F1} ms)",
                                          r.Step, r.Loss, r.Lr, r.GradNorm, r.Ms);
                    }
                }
            }
            return 0;
        }
        catch (TrainrtException e)
        {
            Console.Error.WriteLine("error: {0}", e.Message);
            return 1;
        }
    }
}
