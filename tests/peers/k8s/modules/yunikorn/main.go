// YuniKorn's scheduler for the local control plane (tests/peers/k8s): the k8shim's own main (pkg/cmd/shim) with one
// change, the core's web service left off. yunikorn-core 1.9.0 binds it to ":9080", every interface, with no
// option to say otherwise; the local control plane keeps everything on 127.0.0.1, and its tests read the
// scheduler's decisions from the API server (pod conditions and events), not from that service.
package main

import (
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"

	"github.com/apache/yunikorn-core/pkg/entrypoint"
	corelog "github.com/apache/yunikorn-core/pkg/log"
	"github.com/apache/yunikorn-k8shim/pkg/client"
	"github.com/apache/yunikorn-k8shim/pkg/common/constants"
	"github.com/apache/yunikorn-k8shim/pkg/conf"
	"github.com/apache/yunikorn-k8shim/pkg/log"
	"github.com/apache/yunikorn-k8shim/pkg/plugin/predicates"
	"github.com/apache/yunikorn-k8shim/pkg/shim"
)

func main() {
	log.Log(log.Shim).Info(conf.GetBuildInfoString())
	predicates.EnableOptionalKubernetesFeatureGates()
	configMaps, err := client.LoadBootstrapConfigMaps()
	if err != nil {
		log.Log(log.Shim).Fatal("Unable to bootstrap configuration", zap.Error(err))
	}
	if err = conf.UpdateConfigMaps(configMaps, true); err != nil {
		log.Log(log.Shim).Fatal("Unable to load initial configmaps", zap.Error(err))
	}
	log.Log(log.Shim).Info("Starting scheduler", zap.String("name", constants.SchedulerName))
	corelog.InitializeLogger(log.RootLogger(), log.GetZapConfigs())
	serviceContext := entrypoint.StartAllServicesWithParams(false, false) // no web service
	ss := shim.NewShimScheduler(serviceContext.RMProxy, conf.GetSchedulerConf(), configMaps)
	if err := ss.Run(); err != nil {
		log.Log(log.Shim).Fatal("Unable to start scheduler", zap.Error(err))
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	<-signals
	log.Log(log.Shim).Info("Shutdown signal received, exiting...")
	ss.Stop()
}
