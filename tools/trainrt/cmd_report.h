// `trainrt report` (cmd_report.cpp), and its help text.
#pragma once

namespace trainrt_cli {

int cmd_report(int argc, char** argv);
extern const char* const kReportHelp;

}  // namespace trainrt_cli
