// Command pulumi-language-python is the nemo-rl-gke test bed's Python language host.
//
// It is a stand-in for the upstream host, whose Go module the proxy does not serve. The engine
// talks to it over the real LanguageRuntime protocol; the work itself is done by the real
// sdk/v3 packages of the CLI's release:
//
//   - programs run through `pulumi-language-python-exec` (shipped in sdk/v3) with the
//     toolchain that `runtime.options` selects (toolchain.ResolveToolchain: uv runs
//     `uv sync --inexact` before every command, pip and poetry use their virtualenvs);
//   - policy packs run as `python -u -m pulumi.policy ARGS PACK_DIR` with the pack's folder as
//     the working directory, behind sdk/v3's PolicyProxy, which hands the pack its stack
//     configuration (PULUMI_CONFIG, PULUMI_STACK, ...);
//   - the plugins a program needs come from the pulumi-plugin.json files of the installed
//     Python packages, as the engine expects from GetRequiredPackages;
//   - `typechecker: mypy|pyright` runs the type checker over the program folder before the
//     program, and a failure stops the run.
//
// Everything it does is announced on stderr with the prefix "stand-in language host".
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	sdk "github.com/pulumi/pulumi/sdk/v3"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/version"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/python/toolchain"
)

const (
	execScript = "pulumi-language-python-exec"
	// The exec script exits with this code after it has printed a message meant for the user
	// (for example a pulumi.RunError); the engine then shows no extra error.
	exitAfterUserMessage = 32
)

func announce(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "stand-in language host: "+format+"\n", args...)
}

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer

	exec          string
	engineAddress string
	cancel        context.Context
	stop          context.CancelFunc
}

func main() {
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.String("tracing", "", "accepted for compatibility; tracing is not supported")
	flag.Parse()
	if *showVersion {
		fmt.Println(version.Version)
		return
	}

	self, err := os.Executable()
	if err != nil {
		fail("cannot locate this executable: %v", err)
	}
	script := filepath.Join(filepath.Dir(self), execScript)
	if _, err := os.Stat(script); err != nil {
		fail("missing %s beside the language host: %v", execScript, err)
	}

	ctx, cancelSignals := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancelSignals()
	stopServing := make(chan bool)
	go func() {
		<-ctx.Done()
		close(stopServing)
	}()

	var engine string
	if args := flag.Args(); len(args) > 0 {
		engine = args[0]
		if err := rpcutil.Healthcheck(ctx, engine, 5*time.Minute, cancelSignals); err != nil {
			fail("cannot watch the engine: %v", err)
		}
	}

	runCtx, stop := context.WithCancel(context.Background())
	h := &host{exec: script, engineAddress: engine, cancel: runCtx, stop: stop}
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Cancel: stopServing,
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(srv, h)
			return nil
		},
	})
	if err != nil {
		fail("cannot serve: %v", err)
	}
	// The engine reads the port from the first line of stdout.
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		fail("stopped serving: %v", err)
	}
}

func fail(format string, args ...any) {
	announce(format, args...)
	os.Exit(1)
}

// options turns runtime.options from Pulumi.yaml (or PulumiPolicy.yaml) into toolchain options.
func options(info *pulumirpc.ProgramInfo, forPlugin bool) (toolchain.PythonOptions, error) {
	opts := toolchain.PythonOptions{Root: info.RootDirectory, ProgramDir: info.ProgramDirectory}
	raw := info.GetOptions().AsMap()
	text := func(key string) (string, error) {
		value, ok := raw[key]
		if !ok {
			return "", nil
		}
		s, isString := value.(string)
		if !isString {
			return "", fmt.Errorf("runtime option %q must be a string, got %v", key, value)
		}
		return s, nil
	}
	venv, err := text("virtualenv")
	if err != nil {
		return opts, err
	}
	opts.Virtualenv = venv
	checker, err := text("typechecker")
	if err != nil {
		return opts, err
	}
	switch checker {
	case "":
	case "mypy":
		opts.Typechecker = toolchain.TypeCheckerMypy
	case "pyright":
		opts.Typechecker = toolchain.TypeCheckerPyright
	default:
		return opts, fmt.Errorf("unsupported typechecker option: %s", checker)
	}
	tc, err := text("toolchain")
	if err != nil {
		return opts, err
	}
	switch tc {
	case "":
	case "pip":
		opts.Toolchain = toolchain.Pip
	case "poetry":
		opts.Toolchain = toolchain.Poetry
	case "uv":
		opts.Toolchain = toolchain.Uv
	default:
		return opts, fmt.Errorf("unsupported toolchain option: %s", tc)
	}
	// Plugins (not policy packs) never run in the ambient interpreter.
	if forPlugin && opts.Virtualenv == "" && (opts.Toolchain == toolchain.Auto || opts.Toolchain == toolchain.Pip) {
		opts.Virtualenv = "venv"
	}
	return opts, nil
}

func (h *host) Handshake(
	ctx context.Context, req *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	h.engineAddress = req.EngineAddress
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *host) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version.Version}, nil
}

func (h *host) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	h.stop()
	return &emptypb.Empty{}, nil
}

func (h *host) GetRequiredPlugins(
	context.Context, *pulumirpc.GetRequiredPluginsRequest,
) (*pulumirpc.GetRequiredPluginsResponse, error) {
	return nil, status.Error(codes.Unimplemented, "use GetRequiredPackages")
}

// pluginFilesScript prints, for each distribution name given, the pulumi-plugin.json inside
// its top-level package (or "" when there is none).
const pluginFilesScript = `import importlib.metadata as md, importlib.util as iu, json, os, sys
found = {}
for name in sys.argv[1:]:
    path = ""
    try:
        module = md.distribution(name).metadata["Name"].replace("-", "_")
        spec = iu.find_spec(module)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            candidate = os.path.join(str(folder), "pulumi-plugin.json")
            if os.path.isfile(candidate):
                path = candidate
                break
    except Exception:
        pass
    found[name] = path
print(json.dumps(found))`

type pluginFile struct {
	Resource bool   `json:"resource"`
	Name     string `json:"name"`
	Version  string `json:"version"`
	Server   string `json:"server"`
}

var pep440 = regexp.MustCompile(`^(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:(a|b|rc)(\d+))?$`)

// pluginVersion maps a Python package version onto the plugin's semver (1.2 -> 1.2.0,
// 1.2.3a4 -> 1.2.3-alpha.4); versions it cannot map are skipped, like the upstream host does.
func pluginVersion(pkg string) (string, bool) {
	m := pep440.FindStringSubmatch(pkg)
	if m == nil {
		return "", false
	}
	parts := []string{m[1], m[2], m[3]}
	for i, p := range parts {
		if p == "" {
			parts[i] = "0"
		}
	}
	v := strings.Join(parts, ".")
	switch m[4] {
	case "a":
		v += "-alpha." + m[5]
	case "b":
		v += "-beta." + m[5]
	case "rc":
		v += "-rc." + m[5]
	}
	return v, true
}

func (h *host) GetRequiredPackages(
	ctx context.Context, req *pulumirpc.GetRequiredPackagesRequest,
) (*pulumirpc.GetRequiredPackagesResponse, error) {
	opts, err := options(req.Info, false)
	if err != nil {
		return nil, err
	}
	tc, err := toolchain.ResolveToolchain(opts)
	if err != nil {
		return nil, err
	}
	if err := tc.EnsureVenv(ctx, req.Info.ProgramDirectory, false, true, os.Stderr, os.Stderr); err != nil {
		return nil, err
	}
	installed, err := tc.ListPackages(ctx, true)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(installed))
	for _, p := range installed {
		names = append(names, p.Name)
	}
	cmd, err := tc.Command(ctx, append([]string{"-c", pluginFilesScript}, names...)...)
	if err != nil {
		return nil, err
	}
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("locating pulumi-plugin.json files: %w", err)
	}
	paths := map[string]string{}
	if err := json.Unmarshal(out, &paths); err != nil {
		return nil, fmt.Errorf("reading pulumi-plugin.json locations: %w", err)
	}

	var packages []*pulumirpc.PackageDependency
	for _, p := range installed {
		if p.Name == "pulumi-policy" || p.Name == "pulumi-esc-sdk" {
			continue // packages known to have no plugin
		}
		var meta *pluginFile
		if path := paths[p.Name]; path != "" {
			data, err := os.ReadFile(path)
			if err != nil {
				return nil, err
			}
			meta = &pluginFile{}
			if err := json.Unmarshal(data, meta); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
		if meta == nil && !strings.HasPrefix(p.Name, "pulumi-") {
			continue
		}
		if meta != nil && !meta.Resource {
			continue
		}
		name, ver, server := strings.TrimPrefix(p.Name, "pulumi-"), "", ""
		if meta != nil {
			if meta.Name != "" {
				name = meta.Name
			}
			ver, server = meta.Version, meta.Server
		}
		if ver == "" {
			mapped, ok := pluginVersion(p.Version)
			if !ok {
				continue
			}
			ver = mapped
		}
		if !strings.HasPrefix(ver, "v") {
			ver = "v" + ver
		}
		packages = append(packages, &pulumirpc.PackageDependency{
			Name: name, Version: ver, Kind: "resource", Server: server,
		})
	}
	return &pulumirpc.GetRequiredPackagesResponse{Packages: packages}, nil
}

func (h *host) GetProgramDependencies(
	ctx context.Context, req *pulumirpc.GetProgramDependenciesRequest,
) (*pulumirpc.GetProgramDependenciesResponse, error) {
	opts, err := options(req.Info, false)
	if err != nil {
		return nil, err
	}
	tc, err := toolchain.ResolveToolchain(opts)
	if err != nil {
		return nil, err
	}
	installed, err := tc.ListPackages(ctx, req.TransitiveDependencies)
	if err != nil {
		return nil, err
	}
	deps := make([]*pulumirpc.DependencyInfo, 0, len(installed))
	for _, p := range installed {
		deps = append(deps, &pulumirpc.DependencyInfo{Name: p.Name, Version: p.Version})
	}
	return &pulumirpc.GetProgramDependenciesResponse{Dependencies: deps}, nil
}

func (h *host) About(ctx context.Context, req *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	opts, err := options(req.Info, false)
	if err != nil {
		return nil, err
	}
	tc, err := toolchain.ResolveToolchain(opts)
	if err != nil {
		return nil, err
	}
	info, err := tc.About(ctx)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.AboutResponse{
		Executable: info.PythonExecutable,
		Version:    info.PythonVersion.String(),
		Metadata:   map[string]string{"languageHost": "nemo-rl-gke test bed stand-in"},
	}, nil
}

func (h *host) InstallDependencies(
	req *pulumirpc.InstallDependenciesRequest, server pulumirpc.LanguageRuntime_InstallDependenciesServer,
) error {
	opts, err := options(req.Info, req.IsPlugin)
	if err != nil {
		return err
	}
	closer, stdout, stderr, err := rpcutil.MakeInstallDependenciesStreams(server, req.IsTerminal)
	if err != nil {
		return err
	}
	defer closer.Close()
	tc, err := toolchain.ResolveToolchain(opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Installing dependencies (stand-in language host, %s toolchain)...\n", toolchain.Name(opts.Toolchain))
	if err := tc.InstallDependencies(server.Context(), req.Info.ProgramDirectory, req.UseLanguageVersionTools,
		true, stdout, stderr); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "Finished installing dependencies")
	return closer.Close()
}

// typecheck runs the configured type checker over the program folder, as the upstream host
// does before every run; its output is shown and a failure stops the run.
func typecheck(ctx context.Context, tc toolchain.Toolchain, opts toolchain.PythonOptions, dir string) error {
	var args []string
	switch opts.Typechecker {
	case toolchain.TypeCheckerNone:
		return nil
	case toolchain.TypeCheckerMypy:
		venv, err := tc.VirtualEnvPath(ctx)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, venv)
		if err != nil {
			return err
		}
		args = []string{"-m", "mypy", "--exclude", rel, dir}
	case toolchain.TypeCheckerPyright:
		args = []string{"-m", "pyright", dir}
	}
	announce("type checking %s: python %s", dir, strings.Join(args, " "))
	cmd, err := tc.Command(ctx, args...)
	if err != nil {
		return err
	}
	var output bytes.Buffer
	cmd.Dir = dir
	cmd.Stdout = io.MultiWriter(os.Stdout, &output)
	cmd.Stderr = io.MultiWriter(os.Stderr, &output)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s failed: %w\n%s", args[1], err, output.String())
	}
	return nil
}

func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	opts, err := options(req.Info, false)
	if err != nil {
		return nil, err
	}
	tc, err := toolchain.ResolveToolchain(opts)
	if err != nil {
		return nil, err
	}
	if err := tc.ValidateVenv(ctx); err != nil {
		return nil, err
	}
	if err := typecheck(ctx, tc, opts, req.Info.ProgramDirectory); err != nil {
		return nil, err
	}

	args := []string{h.exec}
	flagArg := func(name, value string) {
		if value != "" {
			args = append(args, "--"+name, value)
		}
	}
	flagArg("monitor", req.GetMonitorAddress())
	flagArg("engine", h.engineAddress)
	flagArg("project", req.GetProject())
	flagArg("root_directory", req.GetInfo().GetRootDirectory())
	flagArg("stack", req.GetStack())
	flagArg("pwd", req.GetPwd())
	flagArg("dry_run", strconv.FormatBool(req.GetDryRun()))
	flagArg("parallel", strconv.Itoa(int(req.GetParallel())))
	flagArg("organization", req.GetOrganization())
	args = append(args, req.Info.EntryPoint)
	args = append(args, req.GetArgs()...)

	runCtx, cancelRun := context.WithCancel(h.cancel)
	defer cancelRun()
	context.AfterFunc(ctx, cancelRun)
	cmd, err := tc.Command(runCtx, args...)
	if err != nil {
		return nil, err
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	config, err := json.Marshal(req.GetConfig())
	if err != nil {
		return nil, err
	}
	secretKeys := req.GetConfigSecretKeys()
	if secretKeys == nil {
		secretKeys = []string{}
	}
	secretJSON, err := json.Marshal(secretKeys)
	if err != nil {
		return nil, err
	}
	if req.GetConfig() != nil {
		env = append(env, "PULUMI_CONFIG="+string(config))
	}
	cmd.Env = append(env, "PULUMI_CONFIG_SECRET_KEYS="+string(secretJSON))
	announce("running the program with the %s toolchain of sdk/v3 %s", toolchain.Name(opts.Toolchain), version.Version)

	if err := cmd.Run(); err != nil {
		_ = os.Stdout.Sync()
		_ = os.Stderr.Sync()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.ExitStatus() == exitAfterUserMessage {
				return &pulumirpc.RunResponse{Bail: true}, nil
			}
			return &pulumirpc.RunResponse{Error: fmt.Sprintf("program exited with non-zero exit code: %d", exit.ExitCode())}, nil
		}
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("could not run the program: %v", err)}, nil
	}
	return &pulumirpc.RunResponse{}, nil
}

func (h *host) RunPlugin(req *pulumirpc.RunPluginRequest, server pulumirpc.LanguageRuntime_RunPluginServer) error {
	ctx := server.Context()
	analyzer := req.Kind == string(apitype.AnalyzerPlugin)
	opts, err := options(req.Info, !analyzer)
	if err != nil {
		return err
	}
	tc, err := toolchain.ResolveToolchain(opts)
	if err != nil {
		return err
	}
	var args []string
	if analyzer {
		// Policy packs start the way the upstream host has always started them.
		args = append([]string{"-u", "-m", "pulumi.policy"}, req.Args...)
		args = append(args, req.Info.ProgramDirectory)
	} else {
		args = append([]string{req.Info.ProgramDirectory}, req.Args...)
	}
	cmd, err := tc.Command(ctx, args...)
	if err != nil {
		return err
	}
	closer, stdout, stderr, err := rpcutil.MakeRunPluginStreams(server, false)
	if err != nil {
		return err
	}
	defer closer.Close()

	cmd.Dir = req.Pwd
	var proxy *sdk.PolicyProxy
	if analyzer {
		// A pack's folder is its working directory, so it comes first on sys.path.
		cmd.Dir = req.Info.ProgramDirectory
		proxy, stdout, err = sdk.NewPolicyProxy(ctx, stdout)
		if err != nil {
			return fmt.Errorf("starting the policy pack proxy: %w", err)
		}
		stackConfig, err := proxy.AwaitConfiguration(ctx)
		if err != nil {
			return fmt.Errorf("waiting for the stack configuration: %w", err)
		}
		if stackConfig != nil {
			add := func(k, v string) {
				if v != "" {
					cmd.Env = append(cmd.Env, k+"="+v)
				}
			}
			add("PULUMI_ORGANIZATION", stackConfig.Organization)
			add("PULUMI_PROJECT", stackConfig.Project)
			add("PULUMI_STACK", stackConfig.Stack)
			add("PULUMI_DRY_RUN", strconv.FormatBool(stackConfig.DryRun))
			if stackConfig.Config != nil {
				data, err := json.Marshal(stackConfig.Config)
				if err != nil {
					return err
				}
				add("PULUMI_CONFIG", string(data))
			}
		}
	}
	cmd.Env = append(cmd.Env, req.Env...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	announce("running %s plugin in %s: python %s", req.Kind, cmd.Dir, strings.Join(args, " "))

	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the plugin: %w", err)
	}
	if proxy != nil {
		// Attach forwards the engine's analyzer calls to the pack and returns when it exits.
		err = proxy.Attach(ctx, cmd)
	} else {
		err = cmd.Wait()
	}
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return server.Send(&pulumirpc.RunPluginResponse{
				Output: &pulumirpc.RunPluginResponse_Exitcode{Exitcode: int32(exit.ExitCode())},
			})
		}
		return fmt.Errorf("running the plugin: %w", err)
	}
	return closer.Close()
}
